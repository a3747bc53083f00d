package webshop

import (
	"math/rand/v2"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

var _ envs.RandomActor = (*Env)(nil)

// RandomAction implements envs.RandomActor: on the search page a search
// for one to three words of a uniformly random catalog product's title,
// elsewhere a uniformly random one of the page's available clicks (the
// list RAGEN shows the agent).
func (e *Env) RandomAction(rng *rand.Rand) (string, error) {
	if !e.started {
		return "", envs.ErrNotReset
	}
	if e.st.page == pageSearch {
		words := strings.Fields(e.cat.Products[rng.IntN(len(e.cat.Products))].Title)
		n := min(len(words), 1+rng.IntN(3))
		start := rng.IntN(len(words) - n + 1)
		return "search[" + strings.ToLower(strings.Join(words[start:start+n], " ")) + "]", nil
	}
	acts := e.availableActions()
	return acts[rng.IntN(len(acts))], nil
}
