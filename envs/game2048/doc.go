// Package game2048 is the 2048 game, registered as "2048": slide the tiles
// of a square board Up, Right, Down or Left so that equal tiles merge,
// after every move a new 2 or 4 appears, and the goal is a tile of a
// target value.
//
// It reproduces RAGEN's game_2048: the same moves and merge rule, new
// tiles (a 2 with probability two_prob, else a 4, on a uniformly drawn
// empty cell), the log reward of the merges, and RAGEN's text render
// beside a compact grid. A move that moves nothing is an invalid step.
// The expert (Env.Advise) is a depth-2 expectimax search.
package game2048
