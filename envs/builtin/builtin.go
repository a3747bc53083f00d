// Package builtin registers every environment bundled with agentrl. Import it
// for its side effect:
//
//	import _ "github.com/agentrl/agentrl/envs/builtin"
//
// A program that adds its own environments imports this package and
// registers them beside the bundled ones.
package builtin

import (
	_ "github.com/agentrl/agentrl/envs/alfworld"   // "alfworld"
	_ "github.com/agentrl/agentrl/envs/bandit"     // "bandit"
	_ "github.com/agentrl/agentrl/envs/codeexec"   // "codeexec"
	_ "github.com/agentrl/agentrl/envs/countdown"  // "countdown"
	_ "github.com/agentrl/agentrl/envs/frozenlake" // "frozenlake"
	_ "github.com/agentrl/agentrl/envs/game2048"   // "2048"
	_ "github.com/agentrl/agentrl/envs/search"     // "search"
	_ "github.com/agentrl/agentrl/envs/sokoban"    // "sokoban"
	_ "github.com/agentrl/agentrl/envs/sudoku"     // "sudoku"
	_ "github.com/agentrl/agentrl/envs/webshop"    // "webshop"
)
