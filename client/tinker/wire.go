package tinker

import (
	"encoding/json"
	"fmt"
)

// The JSON shapes of the Tinker API (REST, every route under /api/v1), as
// the Tinker Python SDK's request and response types define them and
// SkyRL's self-hosted server (skyrl/tinker/api.py) accepts them. Both the
// client in this package and the offline server (server/tinkerapi) use
// these types, so the two cannot drift apart. Fields without omitempty are
// always sent; optional fields are pointers or omitempty so that a server's
// default applies only where the SDK would leave it too.

// APIPrefix is the path every route lives under.
const APIPrefix = "/api/v1"

// Loss function names (forward_backward_input.loss_fn).
const (
	LossCrossEntropy       = "cross_entropy"
	LossImportanceSampling = "importance_sampling"
	LossPPO                = "ppo"
)

// Data types of a TensorData.
const (
	DTypeFloat32 = "float32"
	DTypeInt64   = "int64"
)

// Loss-function input keys of a Datum (loss_fn_inputs).
const (
	InputTargetTokens = "target_tokens" // int64, the token each position predicts
	InputWeights      = "weights"       // float32, cross_entropy's per-token weights
	InputAdvantages   = "advantages"    // float32, importance_sampling and ppo
	InputLogprobs     = "logprobs"      // float32, the sampler's log-probs (importance_sampling, ppo)
)

// Stop reasons of a sampled sequence.
const (
	StopReasonLength = "length"
	StopReasonStop   = "stop"
)

// ChunkEncodedText is the type discriminator of a token chunk.
const ChunkEncodedText = "encoded_text"

// TensorData is a dense tensor: data flattened in row-major order, its
// dtype, and its shape (nil means one dimension of len(Data)). The SDK may
// also send CSR-sparse tensors (sparse_crow_indices, sparse_col_indices);
// Dense expands them.
type TensorData struct {
	Data              []float64 `json:"data"`
	DType             string    `json:"dtype"`
	Shape             []int     `json:"shape,omitempty"`
	SparseCrowIndices []int     `json:"sparse_crow_indices,omitempty"`
	SparseColIndices  []int     `json:"sparse_col_indices,omitempty"`
}

// Floats returns a one-dimensional float32 tensor of xs.
func Floats(xs []float64) TensorData {
	return TensorData{Data: nonNil(xs), DType: DTypeFloat32, Shape: []int{len(xs)}}
}

// Ints returns a one-dimensional int64 tensor of ids.
func Ints(ids []int) TensorData {
	d := make([]float64, len(ids))
	for i, v := range ids {
		d[i] = float64(v)
	}
	return TensorData{Data: d, DType: DTypeInt64, Shape: []int{len(ids)}}
}

func nonNil(xs []float64) []float64 {
	if xs == nil {
		return []float64{}
	}
	return xs
}

// MaxTensorElements bounds the values one tensor may hold once dense, so
// that a shape declared by the other side cannot make Dense allocate
// without limit: a sparse tensor of shape [1, 10^12] holds one value but
// would expand to 8 TB. 1<<24 values (128 MiB as float64) is far more
// than one datum's per-token tensor at any context a Tinker model has.
// A caller that knows how many values a tensor must hold checks Len
// against that first.
const MaxTensorElements = 1 << 24

// Len returns the number of values the tensor holds once dense, after
// checking, without allocating, that its dtype, shape and data agree: a
// dense tensor's shape must hold exactly len(data) values; a CSR-sparse
// one needs a 2-D shape, one row pointer per row plus one, rising from 0
// to len(data), and one column index per value inside its columns. A
// shape of more than MaxTensorElements values is an error.
func (t TensorData) Len() (int, error) {
	if t.DType != DTypeFloat32 && t.DType != DTypeInt64 {
		return 0, fmt.Errorf("tensor dtype %q (want %q or %q)", t.DType, DTypeFloat32, DTypeInt64)
	}
	n := len(t.Data)
	if t.Shape != nil {
		n = 1
		for _, s := range t.Shape {
			if s < 0 {
				return 0, fmt.Errorf("tensor shape %v has a negative dimension", t.Shape)
			}
			// Checked before the product, which could overflow to a
			// small number that matches the data.
			if s > 0 && n > MaxTensorElements/s {
				return 0, fmt.Errorf("tensor shape %v holds more than %d values", t.Shape, MaxTensorElements)
			}
			n *= s
		}
	}
	if t.SparseCrowIndices == nil && t.SparseColIndices == nil {
		if n != len(t.Data) {
			return 0, fmt.Errorf("tensor shape %v holds %d values, data has %d", t.Shape, n, len(t.Data))
		}
		return n, nil
	}
	if len(t.Shape) != 2 || t.SparseCrowIndices == nil || t.SparseColIndices == nil {
		return 0, fmt.Errorf("sparse tensor needs a 2-D shape, sparse_crow_indices and sparse_col_indices")
	}
	rows, cols := t.Shape[0], t.Shape[1]
	crow, col := t.SparseCrowIndices, t.SparseColIndices
	if len(crow) != rows+1 || len(col) != len(t.Data) || crow[0] != 0 || crow[rows] != len(t.Data) {
		return 0, fmt.Errorf("sparse tensor: %d row pointers for %d rows, %d column indices for %d values", len(crow), rows, len(col), len(t.Data))
	}
	for r := range rows {
		if crow[r] > crow[r+1] {
			return 0, fmt.Errorf("sparse tensor: row pointers decrease at row %d", r)
		}
	}
	for _, c := range col {
		if c < 0 || c >= cols {
			return 0, fmt.Errorf("sparse tensor: column %d outside %d columns", c, cols)
		}
	}
	return n, nil
}

// Dense returns the tensor's values in row-major order, expanding a
// CSR-sparse tensor, after checking that data, dtype and shape agree (see
// Len). A dense tensor's values are returned as they are, not copied.
func (t TensorData) Dense() ([]float64, error) {
	n, err := t.Len()
	if err != nil {
		return nil, err
	}
	if t.SparseCrowIndices == nil && t.SparseColIndices == nil {
		return t.Data, nil
	}
	rows, cols := t.Shape[0], t.Shape[1]
	crow, col := t.SparseCrowIndices, t.SparseColIndices
	out := make([]float64, n)
	for r := range rows {
		for k := crow[r]; k < crow[r+1]; k++ {
			out[r*cols+col[k]] = t.Data[k]
		}
	}
	return out, nil
}

// IntValues returns an int64 tensor's values as ints, rejecting values
// that are not whole numbers.
func (t TensorData) IntValues() ([]int, error) {
	d, err := t.Dense()
	if err != nil {
		return nil, err
	}
	out := make([]int, len(d))
	for i, v := range d {
		if v != float64(int(v)) {
			return nil, fmt.Errorf("tensor value %v at %d is not an integer", v, i)
		}
		out[i] = int(v)
	}
	return out, nil
}

// Chunk is one piece of a model input. Only token chunks (type
// "encoded_text") are produced here; a server rejects other types (images)
// with a clear error.
type Chunk struct {
	Type   string `json:"type"`
	Tokens []int  `json:"tokens"`
}

// ModelInput is a sequence of chunks: the tokens a model reads.
type ModelInput struct {
	Chunks []Chunk `json:"chunks"`
}

// TokensInput returns a model input of one token chunk.
func TokensInput(ids []int) ModelInput {
	if ids == nil {
		ids = []int{}
	}
	return ModelInput{Chunks: []Chunk{{Type: ChunkEncodedText, Tokens: ids}}}
}

// Tokens returns the input's tokens, all chunks joined; a chunk of another
// type than encoded_text is an error.
func (m ModelInput) Tokens() ([]int, error) {
	var out []int
	for i, c := range m.Chunks {
		if c.Type != "" && c.Type != ChunkEncodedText {
			return nil, fmt.Errorf("model input chunk %d has type %q; only %q is supported", i, c.Type, ChunkEncodedText)
		}
		out = append(out, c.Tokens...)
	}
	return out, nil
}

// Datum is one training example: the model input (tokens 0..T-1) and the
// loss function's per-position inputs, each of length T: target_tokens[t]
// is the token position t predicts (the input shifted by one), and
// weights / advantages / logprobs as the loss function reads them.
type Datum struct {
	ModelInput   ModelInput            `json:"model_input"`
	LossFnInputs map[string]TensorData `json:"loss_fn_inputs"`
}

// ForwardBackwardInput is the batch and loss of forward and
// forward_backward.
type ForwardBackwardInput struct {
	Data   []Datum `json:"data"`
	LossFn string  `json:"loss_fn"`
	// LossFnConfig holds loss parameters, e.g. clip_low_threshold and
	// clip_high_threshold for ppo.
	LossFnConfig map[string]float64 `json:"loss_fn_config,omitempty"`
}

// ForwardBackwardRequest is the body of POST forward_backward.
type ForwardBackwardRequest struct {
	ModelID              string               `json:"model_id"`
	ForwardBackwardInput ForwardBackwardInput `json:"forward_backward_input"`
	SeqID                *int                 `json:"seq_id,omitempty"`
}

// ForwardRequest is the body of POST forward: the loss and the per-token
// outputs, no gradient.
type ForwardRequest struct {
	ModelID      string               `json:"model_id"`
	ForwardInput ForwardBackwardInput `json:"forward_input"`
	SeqID        *int                 `json:"seq_id,omitempty"`
}

// ForwardBackwardOutput is the result of forward and forward_backward:
// per datum, the loss function's outputs (cross_entropy: "logprobs", the
// log-probability of each target token, and "elementwise_loss"), and
// metrics such as "loss:sum".
type ForwardBackwardOutput struct {
	LossFnOutputType string                  `json:"loss_fn_output_type"`
	LossFnOutputs    []map[string]TensorData `json:"loss_fn_outputs"`
	Metrics          map[string]float64      `json:"metrics"`
}

// AdamParams are the settings of one optim_step: Adam with decoupled
// weight decay, and the global gradient norm clipped to GradClipNorm
// (0: no clipping).
type AdamParams struct {
	LearningRate float64 `json:"learning_rate"`
	Beta1        float64 `json:"beta1"`
	Beta2        float64 `json:"beta2"`
	Eps          float64 `json:"eps"`
	WeightDecay  float64 `json:"weight_decay"`
	GradClipNorm float64 `json:"grad_clip_norm"`
}

// OptimStepRequest is the body of POST optim_step.
type OptimStepRequest struct {
	ModelID    string     `json:"model_id"`
	AdamParams AdamParams `json:"adam_params"`
	SeqID      *int       `json:"seq_id,omitempty"`
	Type       string     `json:"type,omitempty"` // "optim_step"
}

// OptimStepResponse is the result of optim_step.
type OptimStepResponse struct {
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// CreateSessionRequest is the body of POST create_session.
type CreateSessionRequest struct {
	Tags         []string       `json:"tags"`
	UserMetadata map[string]any `json:"user_metadata"`
	SDKVersion   string         `json:"sdk_version"`
	Type         string         `json:"type,omitempty"` // "create_session"
}

// CreateSessionResponse is the reply of create_session.
type CreateSessionResponse struct {
	SessionID      string  `json:"session_id"`
	InfoMessage    *string `json:"info_message,omitempty"`
	WarningMessage *string `json:"warning_message,omitempty"`
	ErrorMessage   *string `json:"error_message,omitempty"`
	Type           string  `json:"type,omitempty"`
}

// SessionHeartbeatRequest is the body of POST session_heartbeat.
type SessionHeartbeatRequest struct {
	SessionID string `json:"session_id"`
	Type      string `json:"type,omitempty"` // "session_heartbeat"
}

// SessionHeartbeatResponse is the reply of session_heartbeat.
type SessionHeartbeatResponse struct {
	Type string `json:"type"` // "session_heartbeat"
}

// LoraConfig configures a model's LoRA adapters. Rank 0 is this project's
// extension (the offline server only): train every weight of the model.
type LoraConfig struct {
	Rank         int    `json:"rank"`
	Seed         *int64 `json:"seed,omitempty"`
	TrainUnembed *bool  `json:"train_unembed,omitempty"`
	TrainMLP     *bool  `json:"train_mlp,omitempty"`
	TrainAttn    *bool  `json:"train_attn,omitempty"`
	// Alpha scales the adapters' output by Alpha/Rank. The SDK does not
	// send it (SkyRL's server fixes it at 32); the offline server takes it
	// when given and defaults to 32.
	Alpha *float64 `json:"alpha,omitempty"`
}

// CreateModelRequest is the body of POST create_model; the reply is a
// future whose result is a CreateModelResponse.
type CreateModelRequest struct {
	SessionID    string         `json:"session_id"`
	ModelSeqID   int            `json:"model_seq_id"`
	BaseModel    string         `json:"base_model"`
	UserMetadata map[string]any `json:"user_metadata,omitempty"`
	LoraConfig   *LoraConfig    `json:"lora_config,omitempty"`
	Type         string         `json:"type,omitempty"` // "create_model"
}

// CreateModelResponse is the result of create_model.
type CreateModelResponse struct {
	ModelID string `json:"model_id"`
	Type    string `json:"type,omitempty"`
}

// UnloadModelRequest is the body of POST unload_model, which frees a
// model on the server; the reply is a future whose result is an
// UnloadModelResponse.
type UnloadModelRequest struct {
	ModelID string `json:"model_id"`
	Type    string `json:"type,omitempty"` // "unload_model"
}

// UnloadModelResponse is the result of unload_model.
type UnloadModelResponse struct {
	ModelID string `json:"model_id"`
	Type    string `json:"type,omitempty"` // "unload_model"
}

// GetInfoRequest is the body of POST get_info.
type GetInfoRequest struct {
	ModelID string `json:"model_id"`
	Type    string `json:"type,omitempty"` // "get_info"
}

// ModelData describes a model's architecture in get_info.
type ModelData struct {
	Arch        *string `json:"arch,omitempty"`
	ModelName   *string `json:"model_name,omitempty"`
	TokenizerID *string `json:"tokenizer_id,omitempty"`
}

// GetInfoResponse is the reply of get_info.
type GetInfoResponse struct {
	ModelID   string    `json:"model_id"`
	ModelData ModelData `json:"model_data"`
	IsLoRA    *bool     `json:"is_lora,omitempty"`
	LoRARank  *int      `json:"lora_rank,omitempty"`
	ModelName *string   `json:"model_name,omitempty"`
	// LoraConfig is the configuration as the server applies it (seed and
	// alpha resolved; the offline server's adapters never train the
	// unembedding, so it reports train_unembed false for rank > 0). The
	// SDK ignores it.
	LoraConfig *LoraConfig `json:"lora_config,omitempty"`
	Type       string      `json:"type,omitempty"`
}

// SaveWeightsRequest is the body of POST save_weights: the weights and
// optimizer state, for load_weights to resume training.
type SaveWeightsRequest struct {
	ModelID string  `json:"model_id"`
	Path    *string `json:"path,omitempty"`
	SeqID   *int    `json:"seq_id,omitempty"`
	Type    string  `json:"type,omitempty"` // "save_weights"
}

// SaveWeightsResponse is the result of save_weights: a
// tinker://<model_id>/weights/<name> path.
type SaveWeightsResponse struct {
	Path string `json:"path"`
	Type string `json:"type,omitempty"`
}

// SaveWeightsForSamplerRequest is the body of POST
// save_weights_for_sampler: the weights alone, for sampling.
type SaveWeightsForSamplerRequest struct {
	ModelID              string  `json:"model_id"`
	Path                 *string `json:"path,omitempty"`
	SamplingSessionSeqID *int    `json:"sampling_session_seq_id,omitempty"`
	SeqID                *int    `json:"seq_id,omitempty"`
	Type                 string  `json:"type,omitempty"` // "save_weights_for_sampler"
}

// SaveWeightsForSamplerResponse is the result of save_weights_for_sampler:
// a tinker://<model_id>/sampler_weights/<name> path (and, when the request
// named a sampling_session_seq_id, the sampling session created on it).
type SaveWeightsForSamplerResponse struct {
	Path              string  `json:"path"`
	SamplingSessionID *string `json:"sampling_session_id,omitempty"`
	Type              string  `json:"type,omitempty"`
}

// LoadWeightsRequest is the body of POST load_weights.
type LoadWeightsRequest struct {
	ModelID   string `json:"model_id"`
	Path      string `json:"path"`
	Optimizer bool   `json:"optimizer"`
	SeqID     *int   `json:"seq_id,omitempty"`
	Type      string `json:"type,omitempty"` // "load_weights"
}

// LoadWeightsResponse is the result of load_weights.
type LoadWeightsResponse struct {
	Path    *string `json:"path,omitempty"`
	ModelID *string `json:"model_id,omitempty"`
	Type    string  `json:"type,omitempty"`
}

// CreateSamplingSessionRequest is the body of POST
// create_sampling_session: exactly one of BaseModel and ModelPath.
type CreateSamplingSessionRequest struct {
	SessionID            string  `json:"session_id"`
	SamplingSessionSeqID int     `json:"sampling_session_seq_id"`
	BaseModel            *string `json:"base_model,omitempty"`
	ModelPath            *string `json:"model_path,omitempty"`
	Type                 string  `json:"type,omitempty"` // "create_sampling_session"
}

// CreateSamplingSessionResponse is the reply of create_sampling_session.
type CreateSamplingSessionResponse struct {
	SamplingSessionID string `json:"sampling_session_id"`
	Type              string `json:"type,omitempty"`
}

// SamplingParams are a sample request's settings. MaxTokens is always sent
// (SkyRL's server requires it). Stop is a list of token ids or of strings;
// TopK -1 and TopP 1 disable truncation.
type SamplingParams struct {
	MaxTokens   int     `json:"max_tokens"`
	Seed        *int64  `json:"seed,omitempty"`
	Stop        any     `json:"stop,omitempty"` // []int or []string
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float64 `json:"top_p"`
}

// SampleRequest is the body of POST asample: sample from model_path (a
// tinker://…/sampler_weights/… path), base_model, or a sampling session.
type SampleRequest struct {
	NumSamples         int            `json:"num_samples"`
	Prompt             ModelInput     `json:"prompt"`
	SamplingParams     SamplingParams `json:"sampling_params"`
	BaseModel          *string        `json:"base_model,omitempty"`
	ModelPath          *string        `json:"model_path,omitempty"`
	SamplingSessionID  *string        `json:"sampling_session_id,omitempty"`
	SeqID              *int           `json:"seq_id,omitempty"`
	PromptLogprobs     *bool          `json:"prompt_logprobs,omitempty"`
	TopKPromptLogprobs int            `json:"topk_prompt_logprobs"`
	Type               string         `json:"type,omitempty"` // "sample"
}

// SampledSequence is one sampled continuation: the tokens (a final stop
// token included), each token's log-probability, and why it stopped.
type SampledSequence struct {
	StopReason string    `json:"stop_reason"`
	Tokens     []int     `json:"tokens"`
	Logprobs   []float64 `json:"logprobs"`
}

// SampleResponse is the result of asample. PromptLogprobs, when
// requested, has one entry per prompt token; entry 0 is null. (SkyRL's
// JAX engine sends one fewer, without the leading null; Client.Sample
// adds it and sets PromptLogprobsShifted.)
type SampleResponse struct {
	Sequences          []SampledSequence `json:"sequences"`
	PromptLogprobs     []*float64        `json:"prompt_logprobs,omitempty"`
	TopKPromptLogprobs [][]TokenLogprob  `json:"topk_prompt_logprobs,omitempty"`
	Type               string            `json:"type,omitempty"`
	// PromptLogprobsShifted says that the server sent n−1 prompt
	// log-probs, the first token's left out rather than null, and that
	// the leading null was added here. Not on the wire.
	PromptLogprobsShifted bool `json:"-"`
}

// TokenLogprob is a (token id, log-prob) pair, sent as a two-element JSON
// array.
type TokenLogprob struct {
	Token   int
	Logprob float64
}

// MarshalJSON writes [token, logprob].
func (t TokenLogprob) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]any{t.Token, t.Logprob})
}

// UnmarshalJSON reads [token, logprob].
func (t *TokenLogprob) UnmarshalJSON(b []byte) error {
	var pair []json.Number
	if err := json.Unmarshal(b, &pair); err != nil {
		return fmt.Errorf("top-k prompt logprob: %w", err)
	}
	if len(pair) != 2 {
		return fmt.Errorf("top-k prompt logprob has %d elements, want 2", len(pair))
	}
	id, err := pair[0].Int64()
	if err != nil {
		return fmt.Errorf("top-k prompt logprob token: %w", err)
	}
	lp, err := pair[1].Float64()
	if err != nil {
		return fmt.Errorf("top-k prompt logprob: %w", err)
	}
	t.Token, t.Logprob = int(id), lp
	return nil
}

// FutureResponse is the immediate reply of every call that returns a
// future: create_model, forward, forward_backward, optim_step,
// save_weights, save_weights_for_sampler, load_weights, asample.
type FutureResponse struct {
	RequestID string  `json:"request_id"`
	FutureID  string  `json:"future_id,omitempty"`
	Status    string  `json:"status,omitempty"` // "pending"
	ModelID   *string `json:"model_id,omitempty"`
}

// RetrieveFutureRequest is the body of POST retrieve_future, which
// long-polls: the server holds it until the result is ready or its own
// wait ends, then answers a TryAgainResponse (or HTTP 408).
type RetrieveFutureRequest struct {
	RequestID         string `json:"request_id"`
	AllowMetadataOnly bool   `json:"allow_metadata_only"`
}

// TryAgainResponse says a future is still pending: poll again.
type TryAgainResponse struct {
	Type      string `json:"type"` // "try_again"
	RequestID string `json:"request_id"`
	// QueueState is "active", "paused_capacity" or "paused_rate_limit".
	QueueState string `json:"queue_state"`
}

// TypeTryAgain is TryAgainResponse's type.
const TypeTryAgain = "try_again"

// Error categories of a RequestFailedResponse.
const (
	CategoryUnknown = "unknown"
	CategoryServer  = "server"
	CategoryUser    = "user"
)

// RequestFailedResponse is a future's result when the request failed: a
// user error (a bad request: do not retry) or a server error.
type RequestFailedResponse struct {
	Error    string `json:"error"`
	Category string `json:"category"`
}

// HealthResponse is the reply of GET healthz.
type HealthResponse struct {
	Status string `json:"status"` // "ok"
}

// SupportedModel is one base model a server trains and samples.
type SupportedModel struct {
	ModelName        string `json:"model_name"`
	MaxContextLength *int   `json:"max_context_length,omitempty"`
}

// GetServerCapabilitiesResponse is the reply of GET
// get_server_capabilities.
type GetServerCapabilitiesResponse struct {
	SupportedModels []SupportedModel `json:"supported_models"`
	// Engine names the training engine behind the server, where the
	// server says (an extension of this project's offline server, which
	// sends EngineAgentrl; the SDK ignores it).
	Engine string `json:"engine,omitempty"`
}

// ErrorBody is the JSON body of an HTTP error reply: FastAPI's
// {"detail": …}, which SkyRL's server and the offline server send.
type ErrorBody struct {
	Detail any `json:"detail"`
}

// WeightsInfoRequest is the body of POST weights_info, which the SDK's
// create_training_client_from_state calls to learn how to create the model
// that a training checkpoint loads into.
type WeightsInfoRequest struct {
	TinkerPath string `json:"tinker_path"`
}

// WeightsInfoResponse is the reply of weights_info: the checkpoint's base
// model and adapters (LoRARank 0 and IsLoRA false for the offline server's
// full-weight checkpoints).
type WeightsInfoResponse struct {
	BaseModel    string `json:"base_model"`
	IsLoRA       bool   `json:"is_lora"`
	LoRARank     *int   `json:"lora_rank,omitempty"`
	TrainUnembed *bool  `json:"train_unembed,omitempty"`
	TrainMLP     *bool  `json:"train_mlp,omitempty"`
	TrainAttn    *bool  `json:"train_attn,omitempty"`
}

// GetSamplerResponse is the reply of GET samplers/{sampler_id}: a sampling
// session's base model and, when it samples saved weights, their path.
type GetSamplerResponse struct {
	SamplerID string  `json:"sampler_id"`
	BaseModel string  `json:"base_model"`
	ModelPath *string `json:"model_path,omitempty"`
}

// ClientConfigRequest is the body of POST client/config and
// client/dynamic_config.
type ClientConfigRequest struct {
	SDKVersion string `json:"sdk_version"`
}

// ClientConfigResponse is the reply of POST client/config: the feature
// flags the SDK fetches before anything else (types/client_config_response.py).
// Flags left out take the SDK's defaults; the SDK ignores flags it does
// not know.
type ClientConfigResponse struct {
	// PJWTAuthEnabled asks the client to exchange its credential for a
	// short-lived JWT (POST auth/token) and send that instead.
	PJWTAuthEnabled bool `json:"pjwt_auth_enabled"`
	// CredentialDefaultSource "credential_cmd" makes the credential
	// exchanged the output of $TINKER_CREDENTIAL_CMD.
	CredentialDefaultSource string `json:"credential_default_source,omitempty"`
	// ParallelFwdBwdChunks false makes the SDK send the chunks of one
	// forward_backward one after the other, in seq_id order.
	ParallelFwdBwdChunks bool `json:"parallel_fwdbwd_chunks"`
	// FwdBwdMaxChunkLen is the most data the SDK puts in one
	// forward_backward request.
	FwdBwdMaxChunkLen int `json:"fwdbwd_max_chunk_len,omitempty"`
	// ProtoWriteFwdBwd and FwdViaFwdBwd make SDKs 0.22.3 to 0.24.1 send
	// forward_backward (and with both, forward) as protobuf; SDK 0.25.0
	// always does.
	ProtoWriteFwdBwd bool `json:"proto_write_fwdbwd,omitempty"`
	FwdViaFwdBwd     bool `json:"fwd_via_fwdbwd,omitempty"`
	// ProtoCompressFwdBwd asks for the protobuf forward_backward body
	// zstd-compressed (Content-Encoding: zstd).
	ProtoCompressFwdBwd bool `json:"proto_compress_fwdbwd,omitempty"`
	// UsePyqwestTransport false keeps the SDK on httpx's own transport
	// (the pyqwest package is then not needed).
	UsePyqwestTransport *bool `json:"use_pyqwest_transport,omitempty"`
}

// ClientDynamicConfigResponse is the reply of POST client/dynamic_config,
// flags the SDK refetches every RefreshIntervalSec (a 404 means the
// defaults).
type ClientDynamicConfigResponse struct {
	RefreshIntervalSec int `json:"refresh_interval_sec"`
}

// AuthTokenResponse is the reply of POST auth/token: the JWT that the
// credential was exchanged for.
type AuthTokenResponse struct {
	JWT string `json:"jwt"`
}

// TelemetryResponse is the reply of POST telemetry.
type TelemetryResponse struct {
	Status string `json:"status"` // "accepted"
}
