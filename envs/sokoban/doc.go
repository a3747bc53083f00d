// Package sokoban is the Sokoban environment, registered as "sokoban": push
// every box onto a target in a walled room.
//
// It reproduces RAGEN's version of gym-sokoban: the same level generator
// (random-walk rooms, reverse play), the same push dynamics and rewards, and
// the same grid, coord and grid_coord text observations. Levels can also be
// loaded from text in RAGEN's symbols or the standard .xsb notation
// (ParseLevel), and an optimal solver (Solve) backs the expert (Env.Advise).
//
// # Generation
//
// Generate follows RAGEN's generate_room: a random walk of
// int(1.7*(dim_x+dim_y)) steps that turns with probability 0.35 and stamps
// one of five 3x3 floor masks, border walls, a random player and targets,
// then a depth-first reverse play from the solved state (pulls only, depth
// search_depth, at most 300,000 states) keeping the first state with the
// highest box_swaps x total Manhattan displacement among states with every
// target uncovered; four rooms per seed; then RAGEN's random walk of the
// player (1 to 3 steps). dim_x is the number of rows and dim_y of columns,
// as in gym-sokoban's dim_room. The search keeps the original's quirks that
// shape the level distribution: its visited set is keyed by the board alone
// and checked after the depth limit, so a state first reached deep is never
// searched again from a shallower path. Differences:
//
//   - When a seed yields no level, RAGEN re-seeds with Python's
//     hash(str(seed)), which changes between processes; here the next seed
//     is a fixed function of the previous one, so every seed's level is
//     reproducible. A configuration that yields nothing in 1000 seeds is an
//     error (reported by New).
//   - All randomness comes from envs.NewRand(seed, ...), so levels are not
//     bit-identical to Python's; their distribution is. On 10,000 6x6
//     one-box levels the mean optimal solution is 4.11 moves here and 4.09
//     for a Python port of RAGEN's code; 63% of the levels are distinct in
//     both.
//   - RAGEN's player walk may end on a target, so a generated level can
//     start with the player on a target (about 0.6% of 6x6 one-box levels,
//     5% of 7x7 two-box ones). No box ever starts on a target.
//
// # Dynamics
//
// Up, Down, Left and Right (RAGEN's actions 1 to 4) push the box in front of
// the player when the cell beyond it is free and otherwise move the player
// if they can. Each valid move costs 0.1; a box going onto a target earns 1,
// one leaving a target loses 1, and solving earns 10, so a one-box solve in
// k moves returns 10 + 1 - 0.1k. An episode ends when solved or after
// max_steps moves. Text that is not an action is an invalid step: nothing
// changes and it is not counted. The count of boxes on targets starts from
// the level itself (gym-sokoban starts it at 0, which would pay a spurious
// +1 on a loaded level that has a box on a target already).
//
// # Observations and instruction
//
// The grid uses # _ O √ X P S (wall, empty, target, box on target, box,
// player, player on target), one character per cell. The coord format lists
// the board size, then Targets (all of them, covered or not), Boxes (off
// target), Boxes on target, Player and Player on target; walls are not
// listed, as in RAGEN's current code (older versions had a Walls line).
// Unlike RAGEN, whose prompt carries the symbol legend only for the grid
// format and states coordinates up to (5, 5) whatever the size, Instruction
// gives the legend with every format that shows the grid, describes the
// coord lines, and computes the coordinate range from the board.
package sokoban
