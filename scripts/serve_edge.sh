#!/usr/bin/env bash
# Start Sori's edge server: vLLM serving Qwen/Qwen3.6-35B-A3B under the alias "local",
# on a GPU machine on the home network. Speakers reach it as [[edge.endpoints]] url.
#
#   scripts/serve_edge.sh [MAX_SEQS] [PORT]
#     MAX_SEQS  concurrent sequences (--max-num-seqs); roughly the number of speakers that
#               may ask at the same moment, default 8
#     PORT      listen port, default 8000 (then url = "http://HOST:8000/v1")
#
# Needs: pip install vllm (on the GPU machine, not the speaker) and the model weights
# (downloaded from Hugging Face on first start, or set HF_HUB_OFFLINE=1 with a local copy).
# Extra vllm flags can follow in VLLM_EXTRA_ARGS, e.g. "--tensor-parallel-size 2".
# With SORI_EDGE_API_KEY set, the server requires it as a bearer token (passed to vLLM as
# VLLM_API_KEY, so it never shows in the process list); set the same variable on the
# speakers (edge.endpoints.api_key_env).
#
# The flags:
#   --served-model-name local
#       the name clients put in "model"; Sori's edge.model defaults to "local", so the
#       speakers' config does not change when the model behind it does.
#   --default-chat-template-kwargs '{"enable_thinking": false}'
#       Qwen3 models think before answering unless told not to. Off by default keeps the
#       first token fast; Sori turns it on per request (chat_template_kwargs) only for turns
#       its router marks as deep reasoning, and only when edge.allow_thinking = true.
#   --reasoning-parser qwen3
#       when thinking is on, vLLM moves the <think> text out of "content" into a separate
#       reasoning field of each streamed delta; Sori never speaks it.
#   --max-num-seqs N
#       how many requests vLLM batches at once. Higher serves more speakers in parallel
#       but raises each one's time to first token; Sori measures that time per endpoint
#       and moves to another endpoint when its p95 exceeds ttfb_threshold_ms.
set -euo pipefail

max_seqs=${1:-8}
port=${2:-8000}
if ! [[ "$max_seqs" =~ ^[1-9][0-9]*$ ]]; then
    echo "serve_edge.sh: MAX_SEQS must be a positive integer, got '$max_seqs'" >&2
    exit 2
fi
if ! command -v vllm >/dev/null 2>&1; then
    echo "serve_edge.sh: vllm is not installed here; run: pip install vllm (on the GPU machine)" >&2
    exit 2
fi

args=(
    serve Qwen/Qwen3.6-35B-A3B
    --served-model-name local
    --default-chat-template-kwargs '{"enable_thinking": false}'
    --reasoning-parser qwen3
    --max-num-seqs "$max_seqs"
    --host 0.0.0.0
    --port "$port"
)
if [[ -n "${SORI_EDGE_API_KEY:-}" ]]; then
    export VLLM_API_KEY="$SORI_EDGE_API_KEY"
fi
# shellcheck disable=SC2206 # word splitting of the extra flags is intended
extra=(${VLLM_EXTRA_ARGS:-})

echo "serve_edge.sh: vllm serve Qwen/Qwen3.6-35B-A3B as 'local' on port $port, max $max_seqs sequences" >&2
exec vllm "${args[@]}" "${extra[@]}"
