package job

import (
	"reflect"
	"testing"

	"github.com/verl-score/verl-score/rollout"
	"github.com/verl-score/verl-score/score"
)

// Every field of the engine's and the reader's options is part of the
// journal's fingerprint (changing it changes what a row's record holds, so
// a resume under another value must be refused) unless it is tagged
// fingerprint:"-". This test changes each field in turn and checks the
// fingerprint follows the tag; the table below states the classification
// as reviewed, so a tag added or dropped by mistake fails too, while a new
// field needs no entry (it is fingerprinted, the safe default).
func TestFingerprintCoversEveryOption(t *testing.T) {
	notRecorded := map[string]map[string]bool{ // struct -> fields that must not change the fingerprint
		"Options": {
			"MaxConcurrent": true,
			"NoCompileSkip": true,
			"NoDedup":       true,
			"Window":        true,
			"Cache":         true,
			"CacheTimeouts": true,
			"SWE":           true,
		},
		"rollout.Options": {
			"RequireDataSource": true,
			"ScoreKey":          true,
			"IDKey":             true,
			"BatchRows":         true,
			"Warn":              true,
			"Scored":            true,
		},
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
			want := !notRecorded[name][f.Name]
			if tagged := f.Tag.Get("fingerprint") == "-"; tagged == want {
				t.Errorf(
					"%s.%s: tagged fingerprint:\"-\" is %v, but the reviewed classification says it is recorded: %v",
					name,
					f.Name,
					tagged,
					want,
				)
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
					case reflect.String:
						sf.SetString(sf.String() + "x")
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
