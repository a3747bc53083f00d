// Package tokenizer is the byte-level BPE tokenizer and chat template of
// agentrl's embedded (native) policy.
//
// # Vocabulary and ids
//
// Ids are stable and laid out in three blocks:
//
//	0..255    one token per byte value, so any string (UTF-8 or not)
//	          round-trips: Decode(Encode(s)) == s for every s.
//	256..266  the 11 special tokens, in this order: <|pad|> <|bos|>
//	          <|eos|> <|system|> <|user|> <|assistant|> <|end|> <think>
//	          </think> <answer> </answer> (constants PadID..EndAnswerID).
//	267..     merges, in the order Train learned them: merge i creates id
//	          FirstMergeID+i from two earlier ids.
//
// Special ids are the same in every tokenizer, whatever its vocabulary size,
// so a tokenizer with no merges (New, or Train with vocabSize 267) is a
// plain byte tokenizer with the same specials. Merges never involve a special
// id, so a special token is never produced from ordinary text.
//
// # Special tokens in text
//
// Encode recognises the literal strings <think>, </think>, <answer> and
// </answer> in text and emits the matching special token (the model writes
// them, and the prompt tells it to). The role and control tokens (<|pad|>,
// <|bos|>, <|eos|>, <|system|>, <|user|>, <|assistant|>, <|end|>) are only
// emitted by the chat template; their literal text in content is encoded as
// ordinary bytes, so content cannot forge a message boundary. EncodeOrdinary
// never emits any special token. Decode writes every special token as its
// literal text.
//
// # Pre-tokenisation
//
// Merges never cross pre-token boundaries. The rule (recorded in the saved
// file as "agentrl-v1") works on one line at a time:
//
//   - A run of newlines is one pre-token, so no token spans two lines and
//     grid rows never merge with each other.
//   - A grid line, that is a non-empty line made only of grid-cell runes
//     (DefaultGridCells "#_O√XPSG" unless configured), is split into one
//     pre-token per rune. Every cell of a Sokoban or FrozenLake board is
//     therefore exactly one token once its bytes are merged (√ is three bytes
//     and becomes one token as soon as the vocabulary has room), and the
//     model sees cells, not opaque multi-cell chunks. Words elsewhere are not
//     affected even though O, X, P, S and G are letters, because the rule
//     applies to whole lines only.
//   - Any other line is split GPT-2 style: an optional single leading space
//     followed by a run of letters (" Player"), an optional space and one
//     digit (" 3": numbers are split into digits, which helps arithmetic and
//     coordinates), an optional space and a run of other symbols (" ||",
//     "),"), or a run of whitespace; a whitespace run followed by a word
//     leaves its last space to the word.
//
// The cost is measured by TestTokensPerChar on synthetic observations: with
// grid lines split, a 6x6 Sokoban board is always 41 tokens (36 cells and 5
// newlines, 1.0 token per character) and a 4x4 FrozenLake board 19; letting
// BPE merge row fragments (TrainOptions.NoGridSplit) brings them to about 16-20
// and 12-14 tokens with 512-1024 ids, but then a token such as "#__" stands
// for several cells whose positions the model must infer. A coordinate
// "(2, 3)" is five tokens: " (", "2", ",", " 3", ")".
//
// # Chat template
//
// Render writes
//
//	<|bos|> (<|role|> content <|end|>)* [<|assistant|>]
//
// with no newlines or other text between the parts: role tokens are atomic,
// so no separator is needed. The trailing <|assistant|> is the generation
// prompt. Content is encoded with Encode, so think/answer tags in any
// message become tag tokens. <|eos|> and <|pad|> are never written by the
// template; <|pad|> is for batching and <|eos|> is reserved for
// document-level use. Rendering is concatenative: Render(m, false) equals
// <|bos|> followed by AppendMessage of each message, and Render(m[:k], true)
// is a prefix of Render(m, false) when m[k] is an assistant message.
//
// RenderTraining returns, besides the ids, a loss mask that is true on the
// content tokens of assistant messages and on the <|end|> that closes each of
// them (the model must learn to stop), but not on the <|assistant|> role token,
// together with the token ranges of every message and of every
// <think>…</think> and <answer>…</answer> segment of assistant messages.
//
// # Determinism and concurrency
//
// Train is deterministic: the pair with the highest count is merged, ties
// going to the smallest (left id, right id); nothing depends on map iteration
// order, so the same corpus and options give byte-identical saved files. A
// Tokenizer is safe for concurrent use; Encode caches the ids of short
// pre-tokens in a bounded cache.
package tokenizer
