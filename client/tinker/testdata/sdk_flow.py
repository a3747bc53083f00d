"""Drives a Tinker API server through the official SDK's user flow, sending
and reading each call as the SDK of a given version does, with the SDK's
own generated protobuf module for the protobuf bodies and results:

  client/config and client/dynamic_config, create_session, create_model
  (LoRA), forward_backward with each loss the server offers, forward,
  optim_step, save_weights_for_sampler, asample with prompt and top-k
  log-probs, compute_logprobs (asample of one token with prompt
  log-probs), save_weights (save_state) and load_weights (load_state).

Dialects (-dialect):
  0.25.0  forward and forward_backward as protobuf to forward_backward
          (forward_only for forward), zstd-compressed when client/config
          sets proto_compress_fwdbwd; results of forward, forward_backward
          and asample asked for as protobuf only, and a JSON one refused
          as the SDK refuses it.
  0.24.1  forward_backward as protobuf when client/config sets
          proto_write_fwdbwd, forward through it when fwd_via_fwdbwd, else
          JSON; results asked as "application/x-protobuf, application/json".
  json    the JSON dialect of the SDKs before 0.22.3.

The SDK itself does not run here (it needs httpx, pyqwest and pydantic 2);
this needs only a protobuf runtime and zstandard (Debian 12's
python3-protobuf and python3-zstandard):

    python3 sdk_flow.py SDK/src/tinker/proto/tinker_public_pb2.py http://127.0.0.1:8000 0.25.0

It prints one line per call and exits non-zero at the first that fails.
"""

import importlib.util
import json
import math
import struct
import sys
import time
import urllib.error
import urllib.request

import zstandard

_spec = importlib.util.spec_from_file_location("tinker_public_pb2", sys.argv[1])
pb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pb)
BASE = sys.argv[2].rstrip("/") + "/api/v1/"
DIALECT = sys.argv[3]
VERSION = {"0.25.0": "0.25.0", "0.24.1": "0.24.1", "json": "0.22.2"}[DIALECT]
PROTO = "application/x-protobuf"
calls = 0


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def http(route, body=None, ctype="application/json", accept="application/json", encoding=None, method="POST"):
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    req = urllib.request.Request(BASE + route, data=data, method=method)
    req.add_header("X-API-Key", "tml-sdk-flow")
    req.add_header("Accept", accept)
    if data is not None:
        req.add_header("Content-Type", ctype)
    if encoding:
        req.add_header("Content-Encoding", encoding)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def call(route, body=None, method="POST"):
    status, _, raw = http(route, body, method=method)
    if status != 200:
        fail(f"{route}: {status} {raw[:300]!r}")
    return json.loads(raw)


def result(fut, proto_cls=None):
    """Long-polls retrieve_future as the SDK does; proto_cls set: the
    result is one the SDK reads as protobuf."""
    global calls
    if proto_cls is None:
        accept = "application/json"
    elif DIALECT == "0.25.0":
        accept = PROTO
    else:
        accept = PROTO + ", application/json"
    # SDK 0.25.0 first allows a metadata-only answer (the result's size,
    # to reserve memory for it), then asks for the result.
    meta = DIALECT == "0.25.0"
    for _ in range(600):
        status, ctype, raw = http("retrieve_future", {"request_id": fut["request_id"], "allow_metadata_only": meta}, accept=accept)
        if status == 408:
            continue
        if status != 200:
            fail(f"retrieve_future: {status} {raw[:300]!r}")
        if PROTO in ctype:
            if proto_cls is None:
                fail("a protobuf result where JSON was asked for")
            m = proto_cls()
            m.ParseFromString(raw)
            calls += 1
            return m
        if proto_cls is not None and DIALECT == "0.25.0":
            fail(f"Server returned a JSON payload for {proto_cls.__name__}, which SDK 0.25.0 only supports as proto")
        out = json.loads(raw)
        if out.get("type") == "try_again":
            time.sleep(0.05)
            continue
        if out.get("status") == "complete_metadata":
            if not meta:
                fail("a metadata-only answer where it was not allowed")
            meta = False
            continue
        if "error" in out and out.get("category"):
            fail(f"future failed: {out}")
        calls += 1
        return out
    fail("future never finished")


def i32(xs):
    return struct.pack("<%di" % len(xs), *xs)


def f32(xs):
    return struct.pack("<%df" % len(xs), *xs)


def i64(xs):
    return struct.pack("<%dq" % len(xs), *xs)


def floats32(b):
    return list(struct.unpack("<%df" % (len(b) // 4), b))


# --- session and model
cfg = call("client/config", {"sdk_version": VERSION})
status, _, raw = http("client/dynamic_config", {"sdk_version": VERSION})
if status not in (200, 404):
    fail(f"client/dynamic_config: {status} {raw[:200]!r}")
print("client/config", cfg, "dynamic_config", status)
caps = call("get_server_capabilities", method="GET")
base = caps["supported_models"][0]["model_name"]
sess = call("create_session", {"tags": ["sdk-flow"], "user_metadata": {}, "sdk_version": VERSION, "type": "create_session"})
model_id = result(call("create_model", {"session_id": sess["session_id"], "model_seq_id": 0, "base_model": base,
                                        "lora_config": {"rank": 4, "seed": 3, "train_mlp": True, "train_attn": True, "train_unembed": False},
                                        "type": "create_model"}))["model_id"]
print("create_model", model_id, "on", base)
seq = 0


def next_seq():
    global seq
    seq += 1
    return seq


# --- forward and forward_backward
tokens = [1, 72, 101, 108, 108, 111, 2]
inp, tgt = tokens[:-1], tokens[1:]
n = len(tgt)
advantages = [0.5, -1.0, 0.25, 1.0, -0.5, 0.75]
sampled = [-1.5, -2.0, -0.75, -3.0, -1.25, -2.5]
inputs = {
    "cross_entropy": {"weights": ("float32", [0.0, 1.0, 1.0, 1.0, 1.0, 1.0])},
    "importance_sampling": {"advantages": ("float32", advantages), "logprobs": ("float32", sampled)},
    "ppo": {"advantages": ("float32", advantages), "logprobs": ("float32", sampled)},
}


def fwdbwd(loss, forward_only):
    extra = inputs[loss]
    config = {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2} if loss == "ppo" else None
    proto_write = DIALECT == "0.25.0" or (DIALECT == "0.24.1" and cfg.get("proto_write_fwdbwd"))
    via_fwdbwd = DIALECT == "0.25.0" or (DIALECT == "0.24.1" and cfg.get("fwd_via_fwdbwd"))
    s = next_seq()
    if proto_write and (not forward_only or via_fwdbwd):
        m = pb.ForwardBackwardRequest(model_id=model_id, seq_id=s, loss_fn=loss, forward_only=forward_only)
        for k, v in (config or {}).items():
            m.loss_fn_config[k] = v
        d = m.data.add()
        d.model_input.add().encoded_text.tokens = i32(inp)
        t = d.loss_fn_inputs["target_tokens"]
        t.dtype, t.dense = pb.DTYPE_INT64, i64(tgt)
        t.shape.extend([n])
        for name, (_, vals) in extra.items():
            t = d.loss_fn_inputs[name]
            t.dtype, t.dense = pb.DTYPE_FLOAT32, f32(vals)
            t.shape.extend([n])
        body, enc = m.SerializeToString(), None
        if DIALECT == "0.25.0" and cfg.get("proto_compress_fwdbwd"):
            body, enc = zstandard.ZstdCompressor().compress(body), "zstd"
        status, _, raw = http("forward_backward", body, ctype=PROTO, encoding=enc)
        how = "protobuf" + (" zstd" if enc else "")
    else:
        datum = {"model_input": {"chunks": [{"type": "encoded_text", "tokens": inp}]},
                 "loss_fn_inputs": {"target_tokens": {"data": tgt, "dtype": "int64", "shape": [n]},
                                    **{k: {"data": v, "dtype": dt, "shape": [n]} for k, (dt, v) in extra.items()}}}
        fbi = {"data": [datum], "loss_fn": loss, "loss_fn_config": config}
        if forward_only:
            status, _, raw = http("forward", {"model_id": model_id, "forward_input": fbi, "seq_id": s, "type": "forward"})
        else:
            status, _, raw = http("forward_backward", {"model_id": model_id, "forward_backward_input": fbi, "seq_id": s, "type": "forward_backward"})
        how = "JSON"
    if status != 200:
        fail(f"{loss} forward_only={forward_only} ({how}): {status} {raw[:300]!r}")
    out = result(json.loads(raw), pb.ForwardBackwardOutput)
    if isinstance(out, dict):
        lps = out["loss_fn_outputs"][0]["logprobs"]["data"]
        metrics = out["metrics"]
    else:
        rec = out.loss_fn_outputs[0]
        bt = rec.fields["logprobs"]
        off = struct.unpack("<%dq" % (len(bt.offsets) // 8), bt.offsets)
        lps = floats32(bt.data[off[0]:off[1]])
        metrics = dict(out.metrics)
    if len(lps) != n or not all(math.isfinite(x) and x <= 0 for x in lps):
        fail(f"{loss}: logprobs {lps}")
    print(f"{'forward' if forward_only else 'forward_backward'} {loss} ({how}): {len(lps)} logprobs, metrics {metrics}")
    return lps


before = fwdbwd("cross_entropy", True)
for loss in ("cross_entropy", "importance_sampling", "ppo"):
    fwdbwd(loss, False)
opt = result(call("optim_step", {"model_id": model_id, "seq_id": next_seq(), "type": "optim_step",
                                 "adam_params": {"learning_rate": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8,
                                                 "weight_decay": 0.0, "grad_clip_norm": 0.0}}))
after = fwdbwd("cross_entropy", True)
if before == after:
    fail("optim_step changed no log-prob")
print("optim_step", opt, "log-probs moved by up to", max(abs(a - b) for a, b in zip(before, after)))

# --- sampling
path = result(call("save_weights_for_sampler", {"model_id": model_id, "path": "s1", "seq_id": next_seq(),
                                                "type": "save_weights_for_sampler"}))["path"]
print("save_weights_for_sampler", path)


def sample(prompt, max_tokens, num, topk):
    fut = call("asample", {"prompt": {"chunks": [{"type": "encoded_text", "tokens": prompt}]}, "model_path": path,
                           "num_samples": num, "prompt_logprobs": True, "topk_prompt_logprobs": topk, "type": "sample",
                           "sampling_params": {"max_tokens": max_tokens, "seed": 11, "temperature": 1.0, "top_k": -1, "top_p": 1.0}})
    out = result(fut, pb.SampleResponse)
    if isinstance(out, dict):
        seqs = [(s["tokens"], s.get("logprobs")) for s in out["sequences"]]
        plp = out["prompt_logprobs"]
        plp = [math.nan if v is None else v for v in plp]
        topk_rows = out.get("topk_prompt_logprobs")
    else:
        seqs = [(list(struct.unpack("<%di" % (len(s.tokens) // 4), s.tokens)), floats32(s.logprobs)) for s in out.sequences]
        plp = floats32(out.prompt_logprobs)
        tk = out.topk_prompt_logprobs if out.HasField("topk_prompt_logprobs") else None
        topk_rows = None if tk is None else (tk.prompt_length, tk.k)
    return seqs, plp, topk_rows


seqs, plp, topk_rows = sample(inp, 5, 2, 3)
if len(seqs) != 2 or any(len(t) == 0 or len(t) != len(lp) for t, lp in seqs):
    fail(f"asample sequences {seqs}")
if len(plp) != len(inp) or not math.isnan(plp[0]) or not all(math.isfinite(x) for x in plp[1:]):
    fail(f"asample prompt_logprobs {plp}")
if topk_rows is None or (isinstance(topk_rows, tuple) and topk_rows != (len(inp), 3)):
    fail(f"asample top-k prompt log-probs {topk_rows}")
print("asample", [t for t, _ in seqs], "prompt_logprobs", len(plp), "top-k", topk_rows if isinstance(topk_rows, tuple) else len(topk_rows))
_, plp, _ = sample(tokens, 1, 1, 0)
if len(plp) != len(tokens):
    fail(f"compute_logprobs: {len(plp)} for {len(tokens)} tokens")
# The sampler's weights are the trained ones: its prompt log-probs are
# forward's after the step, in float32.
if max(abs(a - b) for a, b in zip(plp[1:], after)) > 1e-4:
    fail(f"compute_logprobs {plp[1:]} differs from forward {after}")
print("compute_logprobs", len(plp), "equal to forward after the step")

# --- save_state, load_state
state = result(call("save_weights", {"model_id": model_id, "path": "st1", "seq_id": next_seq(), "type": "save_weights"}))["path"]
fwdbwd("cross_entropy", False)
result(call("optim_step", {"model_id": model_id, "seq_id": next_seq(), "type": "optim_step",
                           "adam_params": {"learning_rate": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.0, "grad_clip_norm": 0.0}}))
result(call("load_weights", {"model_id": model_id, "path": state, "optimizer": True, "seq_id": next_seq(), "type": "load_weights"}))
restored = fwdbwd("cross_entropy", True)
if restored != after:
    fail(f"load_weights: {restored} is not the saved state's {after}")
print("save_weights", state, "load_weights: the saved state's log-probs again")
print(f"OK {DIALECT}: {calls} results")
