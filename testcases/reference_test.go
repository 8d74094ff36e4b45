package testcases

import "testing"

func TestReferenceForms(t *testing.T) {
	set, err := Parse(
		[]byte(
			`{"gold": "SELECT name FROM t ORDER BY name", "database": "CREATE TABLE t(name);", "database_file": "db/x.sqlite"}`,
		),
	)
	if err != nil {
		t.Fatal(err)
	}
	if set.Reference == nil || set.Reference.Language != "sql" || !set.Ordered || set.DatabaseFile != "db/x.sqlite" ||
		len(
			set.Cases,
		) != 1 || set.Cases[0].Stdin == nil ||
		*set.Cases[0].Stdin != "CREATE TABLE t(name);" || set.Cases[0].Expected != nil {
		t.Errorf("gold form: got %+v", set)
	}
	set, err = Parse([]byte(`{"inputs": ["1", "2"], "reference": {"code": "print(int(input())*2)"}}`))
	if err != nil || set.Reference.Language != "python" || len(set.Cases) != 2 || set.Ordered {
		t.Errorf("reference form: got %+v, %v", set, err)
	}
	if _, err := Parse([]byte(`{"gold": 3}`)); err == nil {
		t.Error("a gold that is no query parses")
	}
}

func TestOrdersAtTop(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT a FROM t ORDER BY a":                              true,
		"select a from t order   by a desc limit 3":               true,
		"SELECT a FROM (SELECT a FROM t ORDER BY a) AS s":         false,
		"SELECT 'ORDER BY' FROM t":                                false,
		"SELECT a FROM t WHERE b IN (SELECT b FROM u ORDER BY b)": false,
		"SELECT a FROM t":                                         false,
	} {
		if got := ordersAtTop(q); got != want {
			t.Errorf("%q: got %v, want %v", q, got, want)
		}
	}
}
