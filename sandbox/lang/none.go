package lang

// Languages a SandboxFusion server accepts but the embedded sandbox
// cannot run here: each answers SandboxError, and Needs says why.
func init() {
	Register(&Language{Name: "csharp", Compiled: true, Fences: []string{"csharp", "cs", "c#"},
		Needs: "dotnet", Note: "dotnet (not in Debian 12, npm or the Go proxy; Debian's mono-mcs stops at C# 7, " +
			"without string? or top-level statements, and mono prints 0.1+0.2 as 0.3 where dotnet prints " +
			"0.30000000000000004: a runner on it would change verl's verdicts)"})
	Register(&Language{Name: "julia", Fences: []string{"julia", "jl"}, Needs: "julia", Note: "julia (not in Debian 12)"})
	Register(
		&Language{
			Name:     "lean",
			Compiled: true,
			Fences:   []string{"lean", "lean4"},
			Needs:    "lean",
			Note:     "lean (not in Debian 12)",
		},
	)
	Register(
		&Language{Name: "swift", Compiled: true, Fences: []string{"swift"}, Needs: "swift", Note: "swift (not in Debian 12)"},
	)
}
