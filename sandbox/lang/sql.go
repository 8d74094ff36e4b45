package lang

import (
	"path/filepath"
	"strings"

	"github.com/verl-score/verl-score/verdict"
)

// SQL runs on SQLite's sqlite3 program, which SandboxFusion lacks (it
// lists sql but answers SandboxError for it, so verl scores every SQL
// solution -1 there). The code is the query. The database is the first
// of the request's files named *.sqlite, *.sqlite3 or *.db (by name), else
// an empty one in memory; stdin, where it is not empty, is a setup script
// run first (CREATE TABLE, INSERT ...). A database file is opened
// read-only unless there is a setup script. Results print one row a
// line, columns separated by "|", NULL as NULL, no header (sqlite3's list
// mode). The first SQL error ends the run with exit code 1 and the
// message on stderr. sqlite3 runs in its safe mode: no ATTACH, no
// readfile() or writefile(), no .shell, .system, .load or .output to a
// file.
const sqlScript = `setup=$(cat)
ro=
if [ -z "$setup" ] && [ "$1" != ":memory:" ]; then ro=-readonly; fi
{ [ -n "$setup" ] && printf '%s\n' "$setup"; cat "$2"; } | exec "$0" -safe -bail -batch -list -noheader -nullvalue NULL $ro "$1"`

// sqlDatabase is the database file among the request's files (sorted),
// or ":memory:".
func sqlDatabase(files []string) string {
	for _, f := range files {
		switch strings.ToLower(filepath.Ext(f)) {
		case ".sqlite", ".sqlite3", ".db":
			return f
		}
	}
	return ":memory:"
}

func init() {
	Register(&Language{
		Name:   "sql",
		Fences: []string{"sql", "sqlite", "mysql", "postgresql"},
		Tools:  []Tool{{"sqlite3", "sqlite3"}},
		Runner: &Runner{
			RunProgram: "sqlite3",
			Source:     "solution.sql",
			Run: func(h Host, a Args) []string {
				db := sqlDatabase(a.Files)
				if db != ":memory:" {
					db = filepath.Join(a.Dir, db)
				}
				return []string{"/bin/sh", "-c", sqlScript, h.Tool("sqlite3"), db, filepath.Join(a.Dir, "solution.sql")}
			},
		},
		Cases: func() []Case {
			setup := optStr("CREATE TABLE t(a INT, b INT);\nINSERT INTO t VALUES (2, 3), (10, -4);\n")
			c := func(name, code, want string, v verdict.Code) Case {
				return Case{Name: "sql/" + name, Language: "sql", Code: code, Stdin: setup, Expected: optStr(want), Want: v}
			}
			timeout := c(
				"timeout",
				"WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n;\n",
				"1\n",
				wantTO,
			)
			timeout.RunTimeout = 1
			return []Case{
				c("correct", "SELECT a + b FROM t ORDER BY a;\n", "5\n6\n", wantT),
				c("wrong", "SELECT a * b FROM t ORDER BY a;\n", "5\n6\n", wantF),
				c("runtime", "SELECT nope FROM t;\n", "5\n6\n", wantRE),
				c("null", "SELECT NULL, 'x' || a FROM t WHERE a = 2;\n", "NULL|x2\n", wantT),
				timeout,
				// The database from the request's files, read-only: a
				// write is an error.
				{Name: "sql/database-file", Language: "sql", Code: "SELECT name FROM sqlite_master;\n",
					Files: map[string]string{"shop.db": sqliteDatabase}, Expected: optStr("items\n"), Want: wantT},
				{Name: "sql/database-read-only", Language: "sql", Code: "DELETE FROM items;\n",
					Files: map[string]string{"shop.db": sqliteDatabase}, Expected: optStr(""), Want: wantRE},
				// Safe mode: no other file is reached, though the run's own
				// would be without it.
				{Name: "sql/attach", Language: "sql", Code: "ATTACH 'shop.db' AS s;\nSELECT 1;\n",
					Files: map[string]string{"shop.db": sqliteDatabase}, Expected: optStr("1\n"), Want: wantRE},
				{
					Name:     "sql/readfile",
					Language: "sql",
					Code:     "SELECT length(readfile('solution.sql')) > 0;\n",
					Expected: optStr("1\n"),
					Want:     wantRE,
				},
				{Name: "sql/shell", Language: "sql", Code: ".shell echo 1\n", Expected: optStr("1\n"), Want: wantRE},
				{Name: "sql/open", Language: "sql", Code: ".open shop.db\nSELECT count(*) FROM items;\n",
					Files: map[string]string{"shop.db": sqliteDatabase}, Expected: optStr("2\n"), Want: wantRE},
			}
		},
	})
}
