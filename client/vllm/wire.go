package vllm

import (
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/toolcall"
)

// The JSON shapes of the vLLM subset this package speaks. Value fields
// without omitempty are always sent, so zero values reach the server.

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	Model  string `json:"model"`
	Prompt any    `json:"prompt"` // []int or [][]int
	// MaxTokens is always set (Sample bounds it by the room left in the
	// context): null means 16 to vLLM (the rest of the context before its
	// normalize_null_max_tokens validator), never what a caller means.
	MaxTokens         *int    `json:"max_tokens"`
	N                 int     `json:"n"`
	Seed              *int64  `json:"seed,omitempty"`
	Temperature       float64 `json:"temperature"`
	TopP              float64 `json:"top_p"`
	TopK              int     `json:"top_k"`
	MinP              float64 `json:"min_p"`
	RepetitionPenalty float64 `json:"repetition_penalty"`
	PresencePenalty   float64 `json:"presence_penalty"`
	FrequencyPenalty  float64 `json:"frequency_penalty"`
	// Logprobs and PromptLogprobs are omitted when nil: prompt_logprobs must
	// never appear on a sampling request.
	Logprobs          *int  `json:"logprobs,omitempty"`
	PromptLogprobs    *int  `json:"prompt_logprobs,omitempty"`
	ReturnTokenIDs    bool  `json:"return_token_ids"`
	SkipSpecialTokens bool  `json:"skip_special_tokens"`
	AddSpecialTokens  bool  `json:"add_special_tokens"`
	StopTokenIDs      []int `json:"stop_token_ids"`
	// IgnoreEOS true makes StopTokenIDs the whole stop set: otherwise vLLM
	// also stops at the model's EOS tokens (the tokenizer's eos_token_id and
	// generation_config's eos_token_id).
	IgnoreEOS              bool `json:"ignore_eos"`
	IncludeStopStrInOutput bool `json:"include_stop_str_in_output"`
}

// completionResponse is the reply of POST /v1/completions.
type completionResponse struct {
	ID      string             `json:"id"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
}

type completionChoice struct {
	Index        int             `json:"index"`
	Text         string          `json:"text"`
	Logprobs     *choiceLogprobs `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	// StopReason is the stop token id, the stop string, or null.
	StopReason any `json:"stop_reason"`
	// TokenIDs and PromptTokenIDs are vLLM extras (return_token_ids); nil
	// when missing or null.
	TokenIDs       []int `json:"token_ids"`
	PromptTokenIDs []int `json:"prompt_token_ids"`
	// PromptLogprobs has one entry per prompt token; entry 0 is null.
	PromptLogprobs []map[string]promptLogprob `json:"prompt_logprobs"`
}

type choiceLogprobs struct {
	// TokenLogprobs has one entry per generated token; a null would be a
	// malformed reply.
	TokenLogprobs []*float64 `json:"token_logprobs"`
}

type promptLogprob struct {
	Logprob      *float64 `json:"logprob"`
	Rank         *int     `json:"rank,omitempty"`
	DecodedToken *string  `json:"decoded_token,omitempty"`
}

// tokenizeTextRequest is the text form of POST /tokenize.
type tokenizeTextRequest struct {
	Model            string `json:"model"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens bool   `json:"add_special_tokens"`
}

// tokenizeChatRequest is the chat form of POST /tokenize.
type tokenizeChatRequest struct {
	Model                string             `json:"model"`
	Messages             []policy.Message   `json:"messages"`
	Tools                []toolcall.APITool `json:"tools,omitempty"`
	AddGenerationPrompt  bool               `json:"add_generation_prompt"`
	ContinueFinalMessage bool               `json:"continue_final_message"`
	AddSpecialTokens     bool               `json:"add_special_tokens"`
}

type tokenizeResponse struct {
	Count       *int  `json:"count"`
	MaxModelLen int   `json:"max_model_len"`
	Tokens      []int `json:"tokens"`
}

type detokenizeRequest struct {
	Model  string `json:"model"`
	Tokens []int  `json:"tokens"`
}

type detokenizeResponse struct {
	Prompt *string `json:"prompt"`
}

type modelList struct {
	Data []modelCard `json:"data"`
}

type modelCard struct {
	ID          string  `json:"id"`
	Root        string  `json:"root,omitempty"`
	Parent      *string `json:"parent"`
	MaxModelLen int     `json:"max_model_len,omitempty"`
}

type loadLoRARequest struct {
	Name string `json:"lora_name"`
	Path string `json:"lora_path"`
}

type unloadLoRARequest struct {
	Name string `json:"lora_name"`
}

// errorBody covers the error shapes vLLM and its proxies send:
// {"error": {"message": ...}}, {"error": "..."} (401 from --api-key),
// {"message": ...} (older vLLM) and {"detail": ...} (FastAPI).
type errorBody struct {
	Error   any `json:"error"`
	Message any `json:"message"`
	Detail  any `json:"detail"`
}
