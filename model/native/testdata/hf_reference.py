# Independent pure-Python (no numpy) reference of Hugging Face's Qwen2/Llama
# forward, following modeling_qwen2: RMSNorm, rotate-half RoPE, repeat_kv GQA,
# QKV bias, SwiGLU MLP, tied or untied head. It checks that the native model
# computes what a Hugging Face model with the same weights computes:
#
#   NATIVE_HF_DUMP=/tmp/hf go test -run TestHFReferenceDump ./model/native
#   python3 model/native/testdata/hf_reference.py /tmp/hf/tied /tmp/hf/tied/go.txt
#   python3 model/native/testdata/hf_reference.py /tmp/hf/untied /tmp/hf/untied/go.txt
#
# Measured 2026-11-30: max difference 4e-7 (float32 Go vs float64 Python).
import json, struct, math, sys

def load(d):
    cfg = json.load(open(d + "/config.json"))
    raw = open(d + "/model.safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8+n]); body = raw[8+n:]
    T = {}
    for k, v in hdr.items():
        if k == "__metadata__": continue
        a, b = v["data_offsets"]
        vals = list(struct.unpack("<%df" % ((b-a)//4), body[a:b]))
        shape = v["shape"]
        if len(shape) == 2:
            r, c = shape
            T[k] = [vals[i*c:(i+1)*c] for i in range(r)]
        else:
            T[k] = vals
    return cfg, T

def linear(x, W, b=None):  # x: [in], W: [out][in]
    y = [sum(wi*xi for wi, xi in zip(row, x)) for row in W]
    if b is not None: y = [a+c for a, c in zip(y, b)]
    return y

def rms(x, w, eps):
    v = sum(a*a for a in x)/len(x)
    r = 1/math.sqrt(v+eps)
    return [wi*a*r for wi, a in zip(w, x)]

def rope(x, pos, base):  # x: [hd]
    hd = len(x); h = hd//2
    inv = [1.0/(base ** (2*i/hd)) for i in range(h)]
    emb = [pos*f for f in inv] * 2
    cos = [math.cos(e) for e in emb]; sin = [math.sin(e) for e in emb]
    rot = [-a for a in x[h:]] + x[:h]
    return [a*c + r*s for a, c, r, s in zip(x, cos, rot, sin)]

def forward(cfg, T, toks):
    D = cfg["hidden_size"]; H = cfg["num_attention_heads"]; KVH = cfg["num_key_value_heads"]
    hd = D//H; eps = cfg["rms_norm_eps"]; base = cfg["rope_theta"]; L = cfg["num_hidden_layers"]
    xs = [list(T["model.embed_tokens.weight"][t]) for t in toks]
    n = len(toks)
    for l in range(L):
        p = "model.layers.%d." % l
        hn = [rms(x, T[p+"input_layernorm.weight"], eps) for x in xs]
        bq = T.get(p+"self_attn.q_proj.bias"); bk = T.get(p+"self_attn.k_proj.bias"); bv = T.get(p+"self_attn.v_proj.bias")
        q = [linear(h, T[p+"self_attn.q_proj.weight"], bq) for h in hn]
        k = [linear(h, T[p+"self_attn.k_proj.weight"], bk) for h in hn]
        v = [linear(h, T[p+"self_attn.v_proj.weight"], bv) for h in hn]
        q = [sum((rope(qi[hh*hd:(hh+1)*hd], i, base) for hh in range(H)), []) for i, qi in enumerate(q)]
        k = [sum((rope(ki[hh*hd:(hh+1)*hd], i, base) for hh in range(KVH)), []) for i, ki in enumerate(k)]
        att = []
        for i in range(n):
            o = []
            for hh in range(H):
                g = hh // (H//KVH)
                qi = q[i][hh*hd:(hh+1)*hd]
                s = [sum(a*b for a, b in zip(qi, k[j][g*hd:(g+1)*hd]))/math.sqrt(hd) for j in range(i+1)]
                m = max(s); e = [math.exp(z-m) for z in s]; z = sum(e)
                pr = [a/z for a in e]
                o += [sum(pr[j]*v[j][g*hd+c] for j in range(i+1)) for c in range(hd)]
            att.append(o)
        xs = [[a+b for a, b in zip(x, linear(o, T[p+"self_attn.o_proj.weight"]))] for x, o in zip(xs, att)]
        hn = [rms(x, T[p+"post_attention_layernorm.weight"], eps) for x in xs]
        def mlp(h):
            g = linear(h, T[p+"mlp.gate_proj.weight"]); u = linear(h, T[p+"mlp.up_proj.weight"])
            a = [gi/(1+math.exp(-gi))*ui for gi, ui in zip(g, u)]
            return linear(a, T[p+"mlp.down_proj.weight"])
        xs = [[a+b for a, b in zip(x, mlp(h))] for x, h in zip(xs, hn)]
    hf = [rms(x, T["model.norm.weight"], eps) for x in xs]
    head = T["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else T["lm_head.weight"]
    out = []
    for t in range(1, n):
        z = linear(hf[t-1], head)
        m = max(z); lse = m + math.log(sum(math.exp(a-m) for a in z))
        lp = [a-lse for a in z]
        ent = -sum(math.exp(a)*a for a in lp)
        out.append((lp[toks[t]], ent))
    return out

cfg, T = load(sys.argv[1])
toks = [1, 5, 9, 3, 36, 0, 12, 7, 7, 20, 31, 2]
ref = forward(cfg, T, toks)
got = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
worst = max(max(abs(a[0]-b[0]), abs(a[1]-b[1])) for a, b in zip(ref, got))
print("max |go - python reference| over logp and entropy:", worst)
