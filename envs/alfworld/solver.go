package alfworld

import (
	"math"

	"github.com/agentrl/agentrl/envs"
)

// planSim prices a plan: it tracks the agent's place and the receptacles
// opened so far, and counts actions.
type planSim struct {
	w    *world
	at   int
	open []bool
	cost int
}

func (w *world) newSim() *planSim {
	return &planSim{w: w, at: w.at, open: append([]bool(nil), w.open...)}
}

func (p *planSim) goTo(r int) {
	if p.at != r {
		p.at = r
		p.cost++
	}
}

// reach goes to r and opens it if it is closed.
func (p *planSim) reach(r int) {
	p.goTo(r)
	if p.w.recs[r].openable && !p.open[r] {
		p.open[r] = true
		p.cost++
	}
}

// costToGo is the number of actions of a shortest plan that reaches the
// goal from the true state (knowing where everything is). Every command
// costs one action and nothing can be destroyed, so the goal is always
// reachable. The plans priced are: put down what the hand holds if the
// plan does not use it (one action, at the next place the plan reaches
// anyway), then for each object the plan uses, reach it and take it,
// process it at an appliance if the task asks, and reach the target and
// put it there (for a lamp task: carry it to the lamp and turn it on).
// Going anywhere costs the same, so the minimum over the choice of
// objects, targets, appliances and lamps is the optimum; a breadth-first
// search over every command agrees on small scenes (TestCostToGoIsOptimal).
func (w *world) costToGo() int {
	if w.satisfied() {
		return 0
	}
	t := w.task
	var cands []int
	for o := range w.objs {
		if w.isTaskObject(o) {
			cands = append(cands, o)
		}
	}
	best := math.MaxInt
	switch t.Type {
	case LookInLight:
		for _, o := range cands {
			for l := range w.objs {
				if !w.objs[l].lamp {
					continue
				}
				p := w.newSim()
				p.fetch(o, nil)
				p.goTo(w.objs[l].loc)
				if !w.objs[l].on {
					p.cost++
				}
				best = min(best, p.cost)
			}
		}
	case PickTwoAndPlace:
		for r := range w.recs {
			if w.recs[r].kind != t.Target {
				continue
			}
			var free []int
			for _, o := range cands {
				if w.objs[o].loc != r {
					free = append(free, o)
				}
			}
			switch need := 2 - w.countIn(r); need {
			case 1:
				for _, o := range free {
					p := w.newSim()
					p.fetch(o, nil)
					p.reach(r)
					best = min(best, p.cost+1)
				}
			case 2:
				for _, o1 := range free {
					for _, o2 := range free {
						if o1 == o2 {
							continue
						}
						p := w.newSim()
						dropped := map[int]int{}
						p.fetch(o1, dropped)
						p.reach(r)
						p.cost++ // put
						p.fetchFrom(o2, dropped)
						p.reach(r)
						best = min(best, p.cost+1)
					}
				}
			}
		}
	default:
		var appliances []int
		if kind := appliance[t.Type]; kind != "" {
			for r := range w.recs {
				if w.recs[r].kind == kind {
					appliances = append(appliances, r)
				}
			}
		} else {
			appliances = []int{-1}
		}
		for _, o := range cands {
			for _, a := range appliances {
				for r := range w.recs {
					if w.recs[r].kind != t.Target {
						continue
					}
					p := w.newSim()
					p.fetch(o, nil)
					if a >= 0 && !w.done(o) {
						p.goTo(a)
						p.cost++
					}
					p.reach(r)
					best = min(best, p.cost+1)
				}
			}
		}
	}
	return best
}

// fetch brings object o into the agent's hand. Whatever else the hand
// holds is put down first, where o is (one action; the place is reached
// anyway); dropped records where it went, for a later fetch of it.
func (p *planSim) fetch(o int, dropped map[int]int) {
	h := p.w.held
	if h == o {
		return
	}
	loc := p.w.objs[o].loc
	p.reach(loc)
	if h >= 0 {
		p.cost++
		if dropped != nil {
			dropped[h] = loc
		}
	}
	p.cost++ // take
}

// fetchFrom is a second fetch with the hand empty: o may have been put
// down earlier in the plan (dropped).
func (p *planSim) fetchFrom(o int, dropped map[int]int) {
	loc := p.w.objs[o].loc
	if d, ok := dropped[o]; ok {
		loc = d
	}
	p.reach(loc)
	p.cost++
}

// CostToGo implements envs.Solver: the actions of a shortest plan to the
// goal, computed from the true state (so it knows where things are that
// the agent has not found yet). A task is never lost, so solvable is
// always true.
func (e *Env) CostToGo() (int, bool, error) {
	if !e.started {
		return 0, false, envs.ErrNotReset
	}
	return e.w.costToGo(), true, nil
}
