package hftok_test

import (
	"fmt"

	"github.com/agentrl/agentrl/text/hftok"
)

// exampleJSON is a tiny byte-level BPE tokenizer.json: GPT-2's ByteLevel
// pre-tokenizer, three merges and one special token.
const exampleJSON = `{
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [{"id": 8, "content": "<|end|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
  "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false,
    "vocab": {"h": 0, "e": 1, "y": 2, "Ġ": 3, "!": 4, "he": 5, "hey": 6, "Ġhey": 7},
    "merges": ["h e", "he y", "Ġ hey"]}
}`

func Example() {
	tok, err := hftok.Parse([]byte(exampleJSON))
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tok.Encode("hey hey!<|end|>", true)
	fmt.Println(ids)
	fmt.Printf("%q\n", tok.Decode(ids, false))
	fmt.Printf("%q\n", tok.Decode(ids, true))
	id, _ := tok.TokenToID("Ġhey")
	fmt.Println(id, tok.VocabSize())
	// Output:
	// [6 7 4 8]
	// "hey hey!<|end|>"
	// "hey hey!"
	// 7 9
}
