package openaiapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/agentrl/agentrl/policy"
)

// tokenizeRequest is the body of POST /tokenize: the text form (prompt) or
// the chat form (messages).
type tokenizeRequest struct {
	Model                string         `json:"model"`
	Prompt               *string        `json:"prompt"`
	Messages             *[]chatMessage `json:"messages"`
	AddGenerationPrompt  *bool          `json:"add_generation_prompt"`
	ContinueFinalMessage *bool          `json:"continue_final_message"`
	AddSpecialTokens     *bool          `json:"add_special_tokens"`
	ReturnTokenStrs      *bool          `json:"return_token_strs"`
	// Tools are offered to the template, as in a chat request.
	Tools json.RawMessage `json:"tools"`
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req tokenizeRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		s.fail(w, r, err)
		return
	}
	var ids []int
	var err error
	switch {
	case req.Messages != nil && req.Prompt == nil:
		if boolOr(req.ContinueFinalMessage, false) {
			s.fail(w, r, badRequest("continue_final_message", "continue_final_message is not supported"))
			return
		}
		msgs, merr := messages(*req.Messages)
		if merr != nil {
			s.fail(w, r, merr)
			return
		}
		// vLLM's defaults: add the generation prompt, and no special
		// tokens on top of the template's.
		ct, terr := s.checkTools(&chatRequest{Tools: req.Tools}, s.base)
		if terr != nil {
			s.fail(w, r, terr)
			return
		}
		ids, err = s.renderTools(ctx, ct, msgs, boolOr(req.AddGenerationPrompt, true), boolOr(req.AddSpecialTokens, false))
	case req.Prompt != nil && req.Messages == nil:
		// vLLM's default for the text form: add special tokens.
		ids, err = s.encodeText(ctx, *req.Prompt, boolOr(req.AddSpecialTokens, true))
	default:
		err = badRequest("prompt", "give either prompt or messages")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ids == nil {
		ids = []int{}
	}
	resp := map[string]any{"count": len(ids), "max_model_len": s.maxModelLen(), "tokens": ids, "token_strs": nil}
	if boolOr(req.ReturnTokenStrs, false) {
		bs, err := s.tokenBytes(ctx, ids)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		strs := make([]string, len(bs))
		for i, b := range bs {
			strs[i] = string(b)
		}
		resp["token_strs"] = strs
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens *[]int `json:"tokens"`
	}
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Tokens == nil {
		s.fail(w, r, badRequest("tokens", "tokens is required"))
		return
	}
	if err := s.checkIDs("tokens", *req.Tokens); err != nil {
		s.fail(w, r, err)
		return
	}
	text, err := s.p.Decode(r.Context(), *req.Tokens)
	if err != nil {
		s.fail(w, r, badRequest("tokens", "%v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompt": text})
}

// renderChat renders msgs with the policy's chat template, as chat requests
// and the chat form of /tokenize do; special puts the text prefix (what
// add_special_tokens adds to a text prompt, see textPrefix) before it, as
// vLLM's add_special_tokens does on top of the template.
func (s *Server) renderChat(ctx context.Context, msgs []policy.Message, gen, special bool) ([]int, error) {
	ids, err := s.p.RenderChat(ctx, msgs, gen)
	if err != nil {
		return nil, badRequest("messages", "rendering the chat template: %v", err)
	}
	return s.withPrefix(ctx, ids, special)
}

// withPrefix puts the special tokens of a text prompt before a rendered
// chat when special (add_special_tokens) is set.
func (s *Server) withPrefix(ctx context.Context, ids []int, special bool) ([]int, error) {
	if !special {
		return ids, nil
	}
	pre, err := s.textPrefix(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Concat(pre, ids), nil
}
