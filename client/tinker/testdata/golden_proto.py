"""Prints the golden protobuf encodings of golden_test.go, made with the
Tinker SDK's own generated schema (tinker/proto/tinker_public_pb2.py of SDK
0.25.0) and its array conventions (numpy's tobytes: little-endian int32
tokens, float32 values, int64 ids, offsets and indices).

Run with the path of the SDK's generated module and any protobuf runtime
(Debian 12's python3-protobuf will do):

    python3 golden_proto.py /path/to/tinker/src/tinker/proto/tinker_public_pb2.py

The module is loaded by itself: the tinker package's __init__ imports the
whole SDK, whose other dependencies are not needed here.
"""

import importlib.util
import math
import struct
import sys

_spec = importlib.util.spec_from_file_location("tinker_public_pb2", sys.argv[1])
pb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pb)


def i32(xs):
    return struct.pack("<%di" % len(xs), *xs)


def f32(xs):
    return struct.pack("<%df" % len(xs), *xs)


def i64(xs):
    return struct.pack("<%dq" % len(xs), *xs)


def fwdbwd(forward_only):
    m = pb.ForwardBackwardRequest(model_id="model_1", seq_id=3, loss_fn="ppo", forward_only=forward_only)
    m.loss_fn_config["clip_low_threshold"] = 0.8
    m.loss_fn_config["clip_high_threshold"] = 1.2
    d = m.data.add()
    d.model_input.add().encoded_text.tokens = i32([1, 2, 300])
    t = d.loss_fn_inputs["target_tokens"]
    t.dtype, t.dense = pb.DTYPE_INT64, i64([2, 300, 4])
    t.shape.extend([3])
    t = d.loss_fn_inputs["advantages"]
    t.dtype, t.dense = pb.DTYPE_FLOAT32, f32([0.5, -1.0, 0.0])
    t.shape.extend([3])
    t = d.loss_fn_inputs["logprobs"]
    t.dtype, t.dense = pb.DTYPE_FLOAT32, f32([-0.25, -2.0, -1.5])
    t.shape.extend([3])
    d = m.data.add()
    d.model_input.add().encoded_text.tokens = i32([7])
    d.model_input.add().encoded_text.tokens = i32([8, 9])
    t = d.loss_fn_inputs["target_tokens"]
    t.dtype, t.dense = pb.DTYPE_INT64, i64([8, 9, 10])
    t.shape.extend([3])
    t = d.loss_fn_inputs["weights"]  # CSR: one value at row 0, column 2
    t.dtype = pb.DTYPE_FLOAT32
    t.sparse_csr.values = f32([1.0])
    t.sparse_csr.crow_indices = i64([0, 1])
    t.sparse_csr.col_indices = i64([2])
    t.shape.extend([1, 3])
    return m


def output():
    m = pb.ForwardBackwardOutput(loss_fn_output_type="ArrayRecord")
    m.metrics["loss:sum"] = 1.5
    r = m.loss_fn_outputs.add(num_datums=2)
    for name, vals in (("elementwise_loss", ([0.5, 1.0], [0.0])), ("logprobs", ([-0.5, -1.0], [-2.0]))):
        bt = r.fields[name]
        bt.dtype = pb.DTYPE_FLOAT32
        bt.data = f32(vals[0] + vals[1])
        bt.offsets = i64([0, 4 * len(vals[0]), 4 * (len(vals[0]) + len(vals[1]))])
    return m


def sample():
    m = pb.SampleResponse()
    m.sequences.add(stop_reason=pb.STOP_REASON_STOP, tokens=i32([5, 6, 2]), logprobs=f32([-0.5, -1.25, -0.125]))
    m.sequences.add(stop_reason=pb.STOP_REASON_LENGTH, tokens=i32([9]), logprobs=f32([-3.0]))
    m.prompt_logprobs = f32([math.nan, -1.5, -0.25])
    # top-2 per prompt position; the first position has none (masked).
    m.topk_prompt_logprobs.k = 2
    m.topk_prompt_logprobs.prompt_length = 3
    m.topk_prompt_logprobs.token_ids = i32([0, 0, 3, 4, 6, 0])
    m.topk_prompt_logprobs.logprobs = f32([-99999.0, -99999.0, -0.125, -2.5, -0.25, -99999.0])
    return m


for name, msg in (("fwdbwd", fwdbwd(False)), ("forward", fwdbwd(True)), ("output", output()), ("sample", sample())):
    print(name, msg.SerializeToString(deterministic=True).hex())
