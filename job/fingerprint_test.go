package job

import (
	"reflect"
	"testing"

	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/score"
)

// Every field of the engine's and the reader's options is either part of
// the journal's fingerprint (changing it changes what a row's record holds,
// so a resume under another value must be refused) or not. A field added
// without being classified here fails the test.
func TestFingerprintCoversEveryOption(t *testing.T) {
	classes := map[string]map[string]bool{ // struct -> field -> fingerprinted
		"Options": {"MaxConcurrent": false, "Timeout": true, "MemoryLimitMB": true, "Mode": true, "Language": true,
			"Extract": true, "NoCompileSkip": false, "NoDedup": false, "Window": false, "Cache": false, "CacheTimeouts": false,
			"Compare": true, "CheckerKey": true, "Audit": true, "AuditFail": true},
		"rollout.Options": {"ResponseKey": true, "DataSourceKey": true, "RequireDataSource": false, "GroundTruthKey": true,
			"ScoreKey": false, "LanguageKey": true, "IDKey": false, "BatchRows": false, "Warn": false},
	}
	type inputs struct {
		engine score.Options
		job    Options
	}
	base := inputs{score.DefaultOptions(), Options{Reader: rollout.DefaultOptions()}}
	for name, target := range map[string]func(o *inputs) reflect.Value{
		"Options":         func(o *inputs) reflect.Value { return reflect.ValueOf(&o.engine).Elem() },
		"rollout.Options": func(o *inputs) reflect.Value { return reflect.ValueOf(&o.job.Reader).Elem() },
	} {
		v := target(&base)
		for i := range v.NumField() {
			f := v.Type().Field(i)
			want, ok := classes[name][f.Name]
			if !ok {
				t.Errorf("%s.%s is not classified: does it change what a row's record holds? add it here, and to runFingerprint if so", name, f.Name)
				continue
			}
			changed := base
			fv := target(&changed).Field(i)
			switch fv.Kind() {
			case reflect.String:
				fv.SetString(fv.String() + "x")
			case reflect.Int, reflect.Int64:
				fv.SetInt(fv.Int() + 3)
			case reflect.Float64:
				fv.SetFloat(fv.Float() + 1.5)
			case reflect.Bool:
				fv.SetBool(!fv.Bool())
			case reflect.Struct:
				// Each field of a struct option (Comparison) changes it.
				for k := range fv.NumField() {
					sub := changed
					sf := target(&sub).Field(i).Field(k)
					switch sf.Kind() {
					case reflect.Int:
						sf.SetInt(sf.Int() + 3)
					case reflect.Float64:
						sf.SetFloat(sf.Float() + 1.5)
					default:
						t.Fatalf("%s.%s.%d: kind %s not handled by this test", name, f.Name, k, sf.Kind())
					}
					if got := runFingerprint(sub.engine, sub.job) != runFingerprint(base.engine, base.job); got != want {
						t.Errorf("%s.%s field %d: changing it changes the fingerprint: %v, want %v", name, f.Name, k, got, want)
					}
				}
				continue
			case reflect.Func, reflect.Interface:
				continue // a callback or a cache changes nothing recorded
			default:
				t.Fatalf("%s.%s: kind %s not handled by this test", name, f.Name, fv.Kind())
			}
			if got := runFingerprint(changed.engine, changed.job) != runFingerprint(base.engine, base.job); got != want {
				t.Errorf("%s.%s: changing it changes the fingerprint: %v, want %v", name, f.Name, got, want)
			}
		}
	}
}
