//go:build linux

package nsinit

import (
	"syscall"
	"unsafe"
)

// A serving init (OpServe) is the parent of a Python fork server and of
// every program the server forks: the server forks each with
// CLONE_PARENT, so that this process, not the server, waits for it. The
// server's thread then does one thing per run, the fork; what comes
// before (the run's network namespace, its PID namespace and that one's
// PID 1) and after (reaping, the PID 1's end, the network namespace's
// return to the pool, the report) is done here, in a process that never
// forks a copy of itself and so copies no page for it.
//
// Requests come on ctl as the caller sends them: a byte and the fds of a
// run (its script, stdin, stdout, stderr, report pipe, kill pipe, then
// the cgroup files it joins). The init keeps the report and kill pipes,
// and passes the server the rest with a network namespace (from its
// pool, or new) and a new PID namespace whose PID 1 it has started. The
// server forks the program into it and answers each request in turn
// with four little-endian int64s: the program's pid (in the server's PID
// namespace, which is this init's), its start on CLOCK_MONOTONIC (ns),
// and the server's CPU time (ns) on the start and of that on the fork.
// When the program has been reaped and its PID 1 has ended (the kill
// pipe's closing ends it at once), the init writes the run's
// ReportFaults, ReportCost and ReportExit and closes its report pipe.

// Numbers the syscall package lacks; the same on every architecture.
const (
	oPath              = 0x200000 // O_PATH
	sysPidfdOpen       = 434
	sysPidfdSendSignal = 424
)

type server struct {
	ctl, mine, theirs int
	proc, ownNet      int
	reapers           *reaperExec
	devBuf            []byte // loopbackUsed's, kept from run to run
}

type forkRun struct {
	rep, kill         int
	net               netns
	reaper, reaperPid int // the run's PID 1: a pidfd, its pid
	pid               int
	t0, spawn         int64
	cost              [2]string // the server's: its start, of that the fork
	exited, gone      bool
	ws                syscall.WaitStatus
	ru, reaperRu      syscall.Rusage
	at                int64
}

func newServer(ctl, proc int) (*server, error) {
	if proc < 0 {
		return nil, syscall.ENOENT // it needs the view's /proc
	}
	own, err := syscall.Openat(proc, "thread-self/ns/net", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &server{
		ctl:     ctl,
		mine:    fds[0],
		theirs:  fds[1],
		proc:    proc,
		ownNet:  own,
		reapers: newReaperExec(proc),
		devBuf:  make([]byte, 0, 16<<10),
	}, nil
}

// serve manages the runs of the server pid until it ends, and returns
// its wait status. It is one loop on this process's main thread, which
// started the server (the parent its programs share): every wait is
// epoll's, made as a raw system call, so that the Go runtime neither
// hands the thread's processor on nor wakes to check on it.
func (s *server) serve(pid int) syscall.WaitStatus {
	syscall.Close(s.theirs)
	// A report pipe its reader has closed, a server that has died: an
	// error to write to, not a signal that ends this process.
	ignoreSignal(syscall.SIGPIPE)
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return s.refuse(pid)
	}
	serverFd, err := pidfdOpen(pid)
	if err != nil {
		return s.refuse(pid) // a kernel before 5.3
	}
	l := &serveLoop{
		s:   s,
		ep:  ep,
		who: map[int]watched{},
		buf: make([]byte, 256),
		oob: make([]byte, syscall.CmsgSpace(12*4)),
	}
	l.watch(s.ctl, onCtl, nil)
	l.watch(serverFd, onServer, nil)
	l.watch(s.mine, onReply, nil)
	events := make([]syscall.EpollEvent, 32)
	for {
		n, _, e := syscall.RawSyscall6(
			syscall.SYS_EPOLL_PWAIT,
			uintptr(ep),
			uintptr(unsafe.Pointer(&events[0])),
			uintptr(len(events)),
			^uintptr(0),
			0,
			0,
		)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return s.refuse(pid)
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			w, ok := l.who[fd]
			if !ok {
				continue
			}
			switch w.kind {
			case onCtl:
				l.request()
			case onReply:
				l.reply()
			case onProgram:
				l.programEnded(fd, w.run)
			case onReaper:
				l.reaperEnded(fd, w.run)
			case onKill:
				l.killed(fd, w.run)
			case onServer:
				// The server has ended: runs it never answered end with
				// empty reports; the rest end with this process.
				for _, r := range l.fifo {
					r.drop()
				}
				return s.wait(pid)
			}
		}
	}
}

// What an fd the serving init waits on is.
const (
	onCtl     = iota // the caller's control socket: requests
	onServer         // the server's pidfd
	onReply          // the server's answers
	onProgram        // a run's program's pidfd
	onReaper         // a run's PID 1's pidfd
	onKill           // a run's kill pipe
)

type watched struct {
	kind int
	run  *forkRun
}

// serveLoop is the state of serve's loop: the fds it waits on, the
// network namespaces it may hand on, and the runs the server has yet to
// answer, oldest first.
type serveLoop struct {
	s        *server
	ep       int
	who      map[int]watched
	pool     []netns // network namespaces whose runs have ended unused
	fifo     []*forkRun
	buf, oob []byte
}

func (l *serveLoop) watch(fd, kind int, r *forkRun) {
	l.who[fd] = watched{kind, r}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
	syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, fd, &ev)
}

func (l *serveLoop) unwatch(fd int) {
	delete(l.who, fd)
	syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_DEL, fd, nil)
}

// request takes one request: the server gets its script, stdio, report
// and cgroup files, a network namespace (from the pool, or new) and a new
// PID namespace whose PID 1 has started; the kill pipe stays here.
func (l *serveLoop) request() {
	s := l.s
	nb, oobn, _, _, err := syscall.Recvmsg(s.ctl, l.buf[:16], l.oob, syscall.MSG_CMSG_CLOEXEC|syscall.MSG_DONTWAIT)
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return
	}
	if err != nil || (nb == 0 && oobn == 0) {
		// The caller is done: so is the server, once its socket closes.
		l.unwatch(s.ctl)
		syscall.Shutdown(s.mine, syscall.SHUT_WR)
		return
	}
	fds := rights(l.oob[:oobn])
	if len(fds) < 6 || len(fds) > 12 {
		closeAll(fds)
		return
	}
	r := &forkRun{rep: fds[4], kill: fds[5], net: netns{-1, -1}, reaper: -1}
	pidns, err := s.prepare(r, &l.pool)
	if err == nil {
		send := append(append([]int{}, fds[:5]...), r.net.ns, pidns)
		err = syscall.Sendmsg(s.mine, []byte{'r'}, syscall.UnixRights(append(send, fds[6:]...)...), nil, syscall.MSG_NOSIGNAL)
		syscall.Close(pidns)
	}
	for i, fd := range fds {
		if i != 4 && i != 5 {
			syscall.Close(fd)
		}
	}
	if err != nil {
		// The run's report ends empty: it goes the plain way.
		r.drop()
		return
	}
	l.fifo = append(l.fifo, r)
}

// reply takes the server's answer to the oldest request: the program's
// pid, its start, and what the start cost the server.
func (l *serveLoop) reply() {
	nb, err := syscall.Read(l.s.mine, l.buf)
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return
	}
	if err != nil || nb == 0 {
		l.unwatch(l.s.mine)
		return
	}
	if nb != 32 || len(l.fifo) == 0 {
		return
	}
	r := l.fifo[0]
	l.fifo = l.fifo[1:]
	buf := l.buf
	r.pid, r.t0 = int(le64(buf[0:])), le64(buf[8:])
	r.cost = [2]string{Itoa(int(le64(buf[16:]))), Itoa(int(le64(buf[24:])))}
	if prog, err := pidfdOpen(r.pid); err == nil {
		l.watch(prog, onProgram, r)
	} else {
		// Nothing of it can be waited for: the run ends now, as killed.
		pidfdKill(r.reaper)
		r.exited, r.ws, r.at = true, syscall.WaitStatus(syscall.SIGKILL), monotonic()
	}
	l.watch(r.reaper, onReaper, r)
	l.watch(r.kill, onKill, r)
}

// programEnded reaps a run's program; its namespace ends with it.
func (l *serveLoop) programEnded(fd int, r *forkRun) {
	l.unwatch(fd)
	syscall.Close(fd)
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(r.pid, &ws, syscall.WNOHANG, &r.ru); err != nil {
		ws = syscall.WaitStatus(syscall.SIGKILL)
	}
	r.exited, r.ws, r.at = true, ws, monotonic()
	pidfdKill(r.reaper)
	if r.gone {
		l.finish(r)
	}
}

// reaperEnded reaps a run's PID 1: every process of the run has ended.
func (l *serveLoop) reaperEnded(fd int, r *forkRun) {
	l.unwatch(fd)
	syscall.Close(fd)
	var ws syscall.WaitStatus
	syscall.Wait4(r.reaperPid, &ws, syscall.WNOHANG, &r.reaperRu)
	r.gone = true
	if r.exited {
		l.finish(r)
	}
}

// killed: the caller closed the run's kill pipe; its namespace ends.
func (l *serveLoop) killed(fd int, r *forkRun) {
	l.unwatch(fd)
	syscall.Close(fd)
	r.kill = -1
	pidfdKill(r.reaper)
}

// finish reports a run that has ended and hands its network namespace
// on where the run left its loopback as it found it.
func (l *serveLoop) finish(r *forkRun) {
	if l.s.loopbackUsed(r.net) {
		r.net.close()
	} else {
		l.pool = append(l.pool, r.net)
	}
	cpu := r.ru.Utime.Nano() + r.ru.Stime.Nano()
	var rep Script
	rep.Op(ReportFaults, Itoa(int(r.ru.Minflt)))
	reaper := r.reaperRu.Utime.Nano() + r.reaperRu.Stime.Nano()
	rep.Op(ReportCost, r.cost[0], r.cost[1], Itoa(int(r.spawn)), Itoa(int(cpu)), Itoa(int(reaper)))
	rep.Op(ReportExit, Itoa(int(r.ws)), Itoa(int(r.at-r.t0)))
	writeAll(r.rep, rep.Bytes())
	syscall.Close(r.rep)
	if r.kill >= 0 {
		l.unwatch(r.kill)
		syscall.Close(r.kill)
	}
}

// prepare gives a run its network namespace (from the pool, or new) and
// its PID namespace, whose PID 1 it starts; it returns an fd of the PID
// namespace.
func (s *server) prepare(r *forkRun, pool *[]netns) (int, error) {
	if k := len(*pool); k > 0 {
		r.net, *pool = (*pool)[k-1], (*pool)[:k-1]
	} else if r.net = s.newNetns(); r.net.ns < 0 {
		return -1, syscall.EAGAIN
	}
	c0 := threadTime()
	pid, pidfd, err := s.reapers.spawn()
	if err != nil {
		return -1, err
	}
	r.reaper, r.reaperPid = pidfd, pid
	pidns, err := syscall.Openat(s.proc, Itoa(pid)+"/ns/pid", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	r.spawn = threadTime() - c0
	return pidns, err
}

// drop ends a run the server never started: its PID 1, its report (empty).
func (r *forkRun) drop() {
	if r.reaper >= 0 {
		pidfdKill(r.reaper)
		syscall.Close(r.reaper)
	}
	r.net.close()
	syscall.Close(r.rep)
	syscall.Close(r.kill)
}

// netns is a network namespace of the pool: an fd of it (ns), and its
// /proc/net/dev (dev), opened in it and so answering for it wherever it
// is read from.
type netns struct{ ns, dev int }

func (n netns) close() {
	if n.ns >= 0 {
		syscall.Close(n.ns)
	}
	if n.dev >= 0 {
		syscall.Close(n.dev)
	}
}

// newNetns makes a network namespace with its loopback up, on this thread,
// which then goes back to its own; ns is -1 where it cannot.
func (s *server) newNetns() netns {
	n := netns{-1, -1}
	if stuckNet || syscall.Unshare(syscall.CLONE_NEWNET) != nil {
		return n
	}
	if fd, err := syscall.Openat(s.proc, "thread-self/ns/net", syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err == nil {
		n.ns = fd
		loopbackUp() // where this fails it stays down, as without namespaces of our own
		// Without it, its run's namespace is not handed on.
		if dev, err := syscall.Openat(s.proc, "thread-self/net/dev", syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err == nil {
			n.dev = dev
		}
	}
	if setns(s.ownNet, syscall.CLONE_NEWNET) != nil {
		stuckNet = true
	}
	return n
}

// threadTime is this thread's CPU time (ns).
func threadTime() int64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0) // CLOCK_THREAD_CPUTIME_ID
	return ts.Nano()
}

// refuse ends a server this init cannot serve: the caller sees it end,
// and its runs (and those after it) start the plain way.
func (s *server) refuse(pid int) syscall.WaitStatus {
	syscall.Kill(pid, syscall.SIGKILL)
	return s.wait(pid)
}

// wait waits for the server pid, reaping whatever else ends first.
func (s *server) wait(pid int) syscall.WaitStatus {
	var ws syscall.WaitStatus
	for {
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || wpid == pid {
			return ws
		}
	}
}

func closeAll(fds []int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}

func pidfdOpen(pid int) (int, error) {
	fd, _, e := syscall.RawSyscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// loopbackUsed says whether the network namespace's loopback has carried a
// packet (or cannot be read): one that has may hold a run's closing
// connections, and is not handed to another run. Its /proc/net/dev is
// read again from the start, from this namespace: no setns, no open.
func (s *server) loopbackUsed(n netns) bool {
	if n.ns < 0 || n.dev < 0 {
		return true
	}
	b := s.devBuf[:0]
	for len(b) < cap(b) {
		k, err := syscall.Pread(n.dev, b[len(b):cap(b)], int64(len(b)))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return true
		}
		if k == 0 {
			break
		}
		b = b[:len(b)+k]
	}
	return loopbackPackets(b) != 0
}

// stuckNet is set when the thread could not go back to its own network
// namespace.
var stuckNet bool

// loopbackPackets is the count of packets "lo" received in a
// /proc/net/dev; -1 where it is not there.
func loopbackPackets(dev []byte) int {
	s := string(dev)
	for i := 0; i+4 <= len(s); i++ {
		if s[i:i+4] != " lo:" {
			continue
		}
		f := fields(s[i+4:], 2)
		if len(f) < 2 {
			return -1
		}
		n, ok := Atoi(f[1])
		if !ok {
			return -1
		}
		return n
	}
	return -1
}

// le64 is the little-endian int64 that b begins with.
func le64(b []byte) int64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return int64(v)
}

// fields is the first n space-separated fields of s.
func fields(s string, n int) []string {
	var out []string
	for len(out) < n {
		i := 0
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
			i++
		}
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' {
			j++
		}
		if i == j {
			break
		}
		out = append(out, s[i:j])
		s = s[j:]
	}
	return out
}

func rights(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if f, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

func setns(fd, kind int) error {
	if _, _, e := syscall.RawSyscall(sysSetnsNr, uintptr(fd), uintptr(kind), 0); e != 0 {
		return e
	}
	return nil
}

// pidfdKill sends SIGKILL through a pidfd (pidfd_send_signal).
func pidfdKill(fd int) {
	syscall.RawSyscall6(sysPidfdSendSignal, uintptr(fd), uintptr(syscall.SIGKILL), 0, 0, 0, 0)
}

func ignoreSignal(sig syscall.Signal) {
	act := [4]uint64{1} // SIG_IGN
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0)
}
