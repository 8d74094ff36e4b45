package lang

// CppFlags are the flags of every C++ compile; the precompiled header is
// built with the same ones, or g++ would not use it.
var CppFlags = []string{"-std=c++17", "-O2"}

func init() {
	Register(&Language{
		Name: "cpp", Compiled: true,
		// C has no runner upstream; g++ builds most of what a model
		// fences as C, which is nearer the answer than an API error.
		Fences: []string{"cpp", "c++", "cxx", "cc", "hpp", "c"},
		Tools:  []Tool{{"g++", "g++"}},
		Runner: &Runner{
			Source:       "solution.cpp",
			CompileCache: PrecompiledHeader,
			Compile: func(h Host, _ Args) []string {
				return append(append([]string{h.Tool("g++")}, CppFlags...), "solution.cpp", "-o", "test")
			},
			Run: built("test"),
		},
		Cases: func() []Case {
			return []Case{
				sumCase(
					"cpp",
					"correct",
					"#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n",
					wantT,
				),
				sumCase(
					"cpp",
					"wrong",
					"#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a*b<<std::endl;}\n",
					wantF,
				),
				sumCase("cpp", "runtime", "#include <cassert>\nint main(){int x=0; assert(x==1); return 0;}\n", wantRE),
				timeoutCase("cpp", "int main(){volatile unsigned long x=0; for(;;) x++;}\n", 1),
				sumCase("cpp", "compile", "int main(){ return undefined_name; }\n", wantCE),
			}
		},
	})
	Register(
		&Language{Name: "cuda", Compiled: true, Fences: []string{"cuda", "cu"}, Needs: "nvcc", Note: "nvcc and a GPU"},
	)
}
