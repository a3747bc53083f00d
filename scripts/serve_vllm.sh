#!/usr/bin/env bash
# Serve a local Hugging Face model with vLLM for `trainer train` with
# server.url (configs/sokoban-vllm.yaml): the OpenAI-compatible API with
# LoRA adapters loaded at run time, one per policy version.
#
#   AGENTRL_API_KEY=secret scripts/serve_vllm.sh models/Qwen2.5-0.5B-Instruct
#
# Settings (environment variables): MAX_LORA_RANK (16, at least the run's
# model.lora.rank), MAX_MODEL_LEN (2048, at least the run's model.max_seq),
# HOST (127.0.0.1), PORT (8000). The server must be able to read the run's
# adapter directory (server.adapter_dir, default RUN/adapters) at the path
# the trainer sends, or at server.adapter_dir_on_server.
#
# Each flag and what it is for. The API these flags enable is the one
# agentrl's tests exercise against `trainer serve`; the script itself has
# not been run against a real vLLM GPU server. Statements marked
# "unverified" are not checked against vLLM's source.
#   VLLM_ALLOW_RUNTIME_LORA_UPDATING=True  enables /v1/load_lora_adapter and
#                           /v1/unload_lora_adapter
#   --enable-lora --max-lora-rank R --max-loras 2
#                           LoRA serving; the rank must be ≥ the adapters'
#                           and one of vLLM's fixed set (8/16/32/64/…);
#                           2 slots hold the new version while the old one
#                           is unloaded
#   --logprobs-mode raw_logprobs
#                           log-softmax of the raw logits, before
#                           temperature and truncation: the policy's own
#                           log-probs, as agentrl defines them. It is also
#                           vLLM's default (checked in its source); stated
#                           so a changed default cannot go unnoticed. That
#                           prompt_logprobs (scoring) always come from raw
#                           logits is unverified.
#   --generation-config vllm
#                           ignore the model's generation_config.json
#                           (Qwen2.5 ships temperature 0.7, top_p 0.8,
#                           top_k 20, repetition_penalty 1.05; unverified);
#                           agentrl sends every sampling field anyway (that
#                           the default is `auto` is unverified)
#   --max-model-len N       the context; longer requests are rejected
#   --api-key KEY           protects /v1 (the LoRA routes included), not the
#                           dev endpoints: keep the server on a private
#                           network
#   --host, --port          where to listen
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 MODEL_DIR [extra vllm serve flags...]" >&2
	exit 2
fi
model=$1
shift
if [ ! -f "$model/config.json" ]; then
	echo "$0: $model is not a local Hugging Face model directory (no config.json); nothing is downloaded" >&2
	exit 2
fi

key=()
if [ -n "${AGENTRL_API_KEY:-}" ]; then
	key=(--api-key "$AGENTRL_API_KEY")
elif [ "${HOST:-127.0.0.1}" != "127.0.0.1" ]; then
	echo "$0: listening on ${HOST} needs an API key (AGENTRL_API_KEY): the LoRA routes make the server read files" >&2
	exit 2
fi

export VLLM_ALLOW_RUNTIME_LORA_UPDATING=True
exec vllm serve "$model" \
	--enable-lora \
	--max-lora-rank "${MAX_LORA_RANK:-16}" \
	--max-loras 2 \
	--max-model-len "${MAX_MODEL_LEN:-2048}" \
	--logprobs-mode raw_logprobs \
	--generation-config vllm \
	--host "${HOST:-127.0.0.1}" \
	--port "${PORT:-8000}" \
	"${key[@]}" \
	"$@"
