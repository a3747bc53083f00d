// Package alfworld is an ALFWorld-style household environment, registered
// as "alfworld": the agent reads a task ("put a hot apple in fridge."),
// moves between receptacles, opens and closes them, takes and puts
// objects, cleans, heats and cools them, and turns on lamps, with
// ALFWorld's command grammar and feedback text.
//
// Scenes are generated from the seed (no ALFWorld game files): one of
// ALFWorld's four room kinds with its receptacles, the task's objects,
// distracting objects and, in bedrooms and living rooms, a lamp, each
// object placed where ALFRED puts that kind of object (data.go). Tasks are
// ALFWorld's six types. Observability is partial: the contents of a
// receptacle are seen only from in front of it and only when it is open
// or does not open.
//
// Observations come in two formats: ALFWorld's text followed by RAGEN's
// list of admissible actions, and a compact restatement of the state for
// small models (Config.ObservationFormat). The expert (Env.Advise) decides
// from what the agent has observed only; the solver (Env.CostToGo) is
// exact and knows the true state. The seen and unseen splits differ in
// the (room, object) combinations the tasks ask for.
package alfworld
