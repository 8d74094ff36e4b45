package report

// pageScript renders the report's Responses section from the embedded
// JSON (details.go): the list, filtered by data source, verdict, task id
// and failure cause, and a response's detail view at #r-ROW-RESPONSE.
// Every table of the page links into it with such an anchor or a filter
// (#cause=...&source=...).
const pageScript = `
(function () {
  var data = JSON.parse(document.getElementById('responses-data').textContent || '[]');
  var byKey = {};
  data.forEach(function (d) { byKey[d.k] = d; });
  var $ = function (id) { return document.getElementById(id); };
  var state = { source: '', kind: '', id: '', cause: '' };
  function esc(s) {
    return String(s == null ? '' : s).replace(/[&<>"]/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c];
    });
  }
  var KW = /^(def|return|if|elif|else|for|while|in|import|from|class|try|except|finally|with|as|lambda|yield|None|True|False|and|or|not|is|pass|break|continue|raise|global|int|long|double|float|char|void|bool|auto|const|static|struct|public|private|class|new|func|var|let|fn|mut|package|using|namespace|template|typename|include|true|false|null|nil|end|function|local|then|do|my|sub|use)$/;
  var TOKEN = /(#[^\n]*|\/\/[^\n]*)|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|(\b\d+(?:\.\d+)?\b)|([A-Za-z_]\w*)/g;
  function highlight(line) {
    var out = '', last = 0, m;
    TOKEN.lastIndex = 0;
    while ((m = TOKEN.exec(line)) !== null) {
      out += esc(line.slice(last, m.index));
      var cls = m[1] ? 'cm' : m[2] ? 'st' : m[3] ? 'nu' : KW.test(m[4]) ? 'kw' : '';
      out += cls ? '<span class="' + cls + '">' + esc(m[0]) + '</span>' : esc(m[0]);
      last = TOKEN.lastIndex;
    }
    return out + esc(line.slice(last));
  }
  function numbered(code) {
    return code.replace(/\n+$/, '').split('\n').map(function (l, i) {
      return '<span class="ln">' + (i + 1) + '</span>' + highlight(l);
    }).join('\n');
  }
  function marked(out, line) {
    var ls = out.replace(/\n+$/, '').split('\n').map(esc);
    if (!line) return ls.join('\n');
    if (line - 1 < ls.length) ls[line - 1] = '<mark class="first-diff">' + ls[line - 1] + '</mark>';
    else ls.push('<mark class="first-diff">(the output ends here)</mark>');
    return ls.join('\n');
  }
  function group(status) {
    switch (status) {
      case 'success': return 'passed';
      case 'wrong_answer': case 'runtime_error': case 'timeout': case 'compile_error': return status;
      case 'compile_timeout': return 'compile_error';
      case 'compile_error_skipped': case '': case undefined: return '';
    }
    return 'infra';
  }
  function matches(d) {
    if (state.source && d.src !== state.source) return false;
    if (state.id && String(d.n).toLowerCase().indexOf(state.id.toLowerCase()) < 0) return false;
    if (state.cause && (!d.causes || d.causes.indexOf(state.cause) < 0)) return false;
    if (!state.kind) return true;
    if (state.kind === 'failed') return d.kind !== 'passed';
    if (state.kind === 'passed') return d.kind === 'passed';
    return d.cases.some(function (c) { return group(c.s) === state.kind; });
  }
  function render() {
    var rows = data.filter(matches);
    var shown = rows.slice(0, 500);
    $('list').tBodies[0].innerHTML = shown.map(function (d) {
      return '<tr><td class="l"><a href="#r-' + d.k + '">' + esc(d.n) + '</a></td><td class="l">' + esc(d.src) +
        '</td><td>' + d.reward + '</td><td class="l">' + esc((d.causes || [])[0] || (d.err || (d.kind === 'passed' ? '' : d.kind))) + '</td></tr>';
    }).join('') + (rows.length > shown.length ? '<tr><td colspan="4" class="muted">… ' + (rows.length - shown.length) + ' more: narrow the filters</td></tr>' : '') +
      (rows.length === 0 ? '<tr><td colspan="4" class="muted">no detailed response matches</td></tr>' : '');
    $('f-cause').innerHTML = state.cause ? 'cause: <code>' + esc(state.cause) + '</code> <a href="#" id="f-cause-clear">clear</a>' : '';
  }
  function showDetail(k) {
    var d = byKey[k], el = $('detail');
    if (!d) {
      el.innerHTML = '<p>Response ' + esc(k.replace('-', ' : ')) + ' is not detailed on this page (see the note above).</p>';
      return;
    }
    var h = '<h3 id="detail-title">' + esc(d.n) + ' · row ' + d.row + ' response ' + d.resp + ' · ' + esc(d.src || '(none)') + ' · reward ' + d.reward + '</h3>';
    if (d.err) h += '<p>reward_error: <code>' + esc(d.err) + '</code></p>';
    if (d.code) h += '<div class="muted">code (' + esc(d.fence || 'no fence language') + ')</div><pre class="code" data-code>' + numbered(d.code) + '</pre>';
    else if (d.text) h += '<div class="muted">no code block; the response</div><pre>' + esc(d.text) + '</pre>';
    if (d.swe) {
      h += '<div class="swe"><p>' + esc(d.swe.head) + '</p>';
      (d.swe.flags || []).forEach(function (f) { h += '<p class="case-bad">flagged: ' + esc(f) + '</p>'; });
      if (d.swe.apply) h += 'apply output<pre>' + esc(d.swe.apply) + '</pre>';
      if (d.swe.log) h += 'test log (its end)<pre data-log>' + esc(d.swe.log) + '</pre>';
      h += '</div>';
    }
    h += '<table class="cases"><tr><th>case</th><th>verdict</th><th>status</th><th>time</th><th>why</th></tr>';
    d.cases.forEach(function (c) {
      h += '<tr><td>' + c.i + '</td><td class="' + (c.v === 'True' ? 'case-ok' : 'case-bad') + '">' + esc(c.v) + '</td><td>' + esc(c.s) +
        '</td><td>' + (c.t != null ? c.t.toFixed(3) + ' s' : '') + '</td><td>' + esc(c.cause || '') + '</td></tr>';
      if (c.compile != null || c['in'] != null) {
        h += '<tr><td></td><td colspan="4">';
        if (c.compile != null) h += 'compiler<pre>' + esc(c.compile) + '</pre>';
        else {
          h += 'input<pre>' + esc(c['in']) + '</pre>expected<pre>' + esc(c.exp) + '</pre>';
          if (c.out != null) h += 'got' + (c.diff ? ' (first difference on line ' + c.diff + ')' : '') + '<pre data-got>' + marked(c.out, c.diff) + '</pre>';
          if (c.errout) h += 'stderr (tail)<pre>' + esc(c.errout) + '</pre>';
        }
        h += '</td></tr>';
      }
    });
    el.innerHTML = h + '</table>';
  }
  function sync() {
    $('f-source').value = state.source; $('f-kind').value = state.kind; $('f-id').value = state.id;
  }
  function fromHash() {
    var h = location.hash.slice(1);
    if (/^r-\d+-\d+$/.test(h)) {
      showDetail(h.slice(2));
      render();
      $('detail').scrollIntoView();
      return;
    }
    var p = new URLSearchParams(h);
    state = { source: p.get('source') || '', kind: p.get('kind') || '', id: p.get('id') || '', cause: p.get('cause') || '' };
    sync();
    $('detail').innerHTML = '';
    render();
    if (h) $('responses').scrollIntoView();
  }
  function toHash() {
    var p = new URLSearchParams();
    ['source', 'kind', 'id', 'cause'].forEach(function (k) { if (state[k]) p.set(k, state[k]); });
    location.hash = p.toString() || 'all=1';
  }
  $('f-source').onchange = function () { state.source = this.value; toHash(); };
  $('f-kind').onchange = function () { state.kind = this.value; toHash(); };
  $('f-id').oninput = function () { state.id = this.value; render(); };
  $('f-cause').onclick = function (e) { if (e.target.id === 'f-cause-clear') { e.preventDefault(); state.cause = ''; toHash(); } };
  window.addEventListener('hashchange', fromHash);
  fromHash();
})();
`
