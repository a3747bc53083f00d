package hftok

import (
	"math/rand/v2"
	"strings"
)

// handCorpus is the hand-written part of the reference corpus: the cases
// most likely to expose a difference in pre-tokenization, normalization,
// added-token matching or decoding.
var handCorpus = []string{
	"", " ", "  ", "\t", "\n", "\r\n", "a", "Hello world", "Hello, world!",
	// Whitespace runs.
	"Hello  world\n\n  x", "a   b", "a \t b", "trailing spaces   ", "   leading spaces",
	"  \n  ", "\n\n\n", "x\n\n\ny", "tabs\t\tand\ttabs", "line1\r\nline2\r\n\r\nline3",
	"\r\r\n\n", " \r\n ", "end with newline\n", "space before newline \n next", "\u00a0nbsp\u00a0x\u00a0",
	"ideographic\u3000space\u3000\u3000x", "thin\u2009space", "nel\u0085x", "line\u2028sep",
	"zero\u200bwidth", "bom\ufeffx", "\ufeff", "\u0085", "\u3000", " \u3000 x",
	// Contractions.
	"I'm", "I'M", "you'Re", "YOU'RE", "don't", "DON'T", "it's", "It'S", "we've", "WE'VE", "she'll",
	"SHE'LL", "he'd", "HE'D", "'s", "'", "''", "'''s", "rock 'n' roll", "'tis", "y'all'd've",
	"o'clock", "l'homme", "'ſ long s", "'ſa", "Das iſt'ſ", "'ſt'ſ'ſſ", "'re'", "the '90s", "’s curly apostrophe", "I'm  'll 'LL 'Ll 'lL",
	// Numbers.
	"1", "12", "123", "1234", "12345", "123456", "1234567", "12345678901234567890", "3.14159",
	"1,000,000", "-42", "+7", "1e10", "0x1F", "v1.2.3", "2024-01-15", "12:34:56", "$1,234.56",
	"٣٤٥ Arabic-Indic", "１２３ fullwidth", "x² + y³", "½ ¼ ¾", "Ⅻ roman", "໑໒໓ Lao digits",
	"a1b22c333d4444", "1 2  3   4",
	// CJK.
	"你好，世界！", "我爱北京天安门", "中文 English 混合 mixed", "日本語のテキスト、ひらがなとカタカナ。",
	"カタカナ ﾊﾝｶｸ", "한국어 텍스트입니다.", "안녕하세요 세계", "東京タワー333メートル",
	"「引用」『二重』【括弧】", "漢字\n\n改行",
	// Emoji.
	"😀", "👍🏽", "👩‍👩‍👧‍👦 family", "🏳️‍🌈 flag", "🇯🇵🇺🇸🇫🇷 flags", "1️⃣ keycap", "❤️ heart",
	"emoji😀in😀words", " 😀 😀  😀", "🧑🏿‍🚀 astronaut", "👨‍💻👩‍🔬", "☺︎ text ☺️ emoji",
	// Combining marks and scripts.
	"e\u0301", "cafe\u0301", "café", "Cafe\u0301 CAFÉ", "a\u0308\u0301", "n\u0303o", "Tiếng Việt có dấu",
	"Tie\u0302\u0301ng Vie\u0323\u0302t", "नमस्ते दुनिया", "हिन्दी भाषा", "ﷺ ligature", "Ελληνικά κείμενο",
	"Русский текст", "עברית", "العربية", "ภาษาไทย", "ქართული", "Å\u030a", "\u0301 leading mark",
	"ﬁ ligature", "Ǆ ǅ ǆ", "ß straße STRASSE", "İstanbul ı", "K Kelvin sign", "Ω Ohm sign", "Å Angstrom",
	"ﾌﾞ halfwidth", "가\u11a8 jamo", "\u1100\u1161\u11a8",
	// Punctuation and symbols.
	"...", "!!!???", "?!", "—–-", "«quoted» „low“ ‘single’", "(parens) [brackets] {braces}",
	"#hashtag @mention", "a.b.c", "foo--bar", "***bold***", "->", "=>", "<=>", "...\n", "!\n\n",
	"©®™°±µ¶·", "→∑√∞≠≈", "€£¥₹", "\x00\x01\x1f\x7f controls", "tab\tpunct:\t;",
	// Code.
	"func main() {\n\tfmt.Println(\"hello, world\")\n}\n",
	"def f(x):\n    return x ** 2  # square\n",
	"if (a && b || !c) { return a[i] + b->c; }",
	"SELECT * FROM users WHERE id = 42;",
	"<div class=\"x\">Hello</div>",
	"{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
	"    indented\n        more\n",
	"x := map[string]int{\"a\": 1}\n",
	// URLs and paths.
	"https://huggingface.co/Qwen/Qwen3-8B/blob/main/tokenizer.json?x=1&y=2#frag",
	"mailto:someone@example.com", "/usr/local/bin/go", "C:\\Windows\\System32",
	// Special-token strings.
	"<|im_start|>user\nhi<|im_end|>", "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
	"<|begin_of_text|>", "<|begin_of_text|>Hello", "x<|begin_of_text|>y",
	"<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>", "<|endoftext|>", "in<|endoftext|>side",
	"words<|endoftext|>words", "<|end_of_text|>", "<think>\nreasoning\n</think>\n\nanswer",
	"<tool_call>{\"name\": \"f\"}</tool_call>", "<|im_start|><|im_start|>", "<|im_", "<|", "|>",
	"<|im_end", "<|im_start|", "<<|im_end|>>", " <|im_end|> ", "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
	"<|reserved_special_token_5|>", "<|reserved_special_token_250|>", "<|reserved_special_token_9999|>",
	"<|IM_START|>", "< |im_start| >",
	// Mixed.
	"The quick brown fox jumps over the lazy dog.",
	"THE QUICK BROWN FOX", "CamelCaseIdentifier snake_case_identifier kebab-case-identifier",
	"Prices: €5, £10, ¥1000; temps: -5°C..+30°C",
	"Ünïcödé ëvérÿwhérè",
	strings.Repeat("a", 300), strings.Repeat("ab ", 200), strings.Repeat("1", 100),
	strings.Repeat(" ", 50) + "x", strings.Repeat("\n", 20), strings.Repeat("😀", 40),
	strings.Repeat("你好", 150),
}

// corpusPieces are the building blocks of the generated corpus, by kind.
var corpusPieces = [][]string{
	{"a", "Z", "the", "The", "HELLO", "world", "x", "é", "ñ", "Æ", "ø", "ß"},
	{"0", "1", "7", "42", "123", "9999", "3.14", "1,000", "٣", "２", "²", "½"},
	{" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\n ", "\u00a0", "\u3000", "\u2009", "\u0085"},
	{".", ",", "!", "?", "...", "-", "--", "(", ")", "[", "]", "{", "}", "\"", "#", "@", "$", "%", "&", "*", "/", "\\", "_", "~", "`", "^", "|", "<", ">", ":", ";", "+", "="},
	{"'", "'s", "'S", "'ſ", "ſ", "'t", "'T", "'re", "'RE", "'Re", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'lL", "'d", "'D", "n't"},
	{"中", "文", "字", "你好", "世界", "北京", "ひ", "らがな", "カタカナ", "한", "국어", "안녕"},
	{"😀", "👍", "🏽", "👍🏽", "👩‍👩‍👧‍👦", "🇯🇵", "🏳️‍🌈", "❤️", "\u200d", "\ufe0f", "🧑🏿‍🚀"},
	{"e\u0301", "\u0301", "\u0308", "ế", "ệ", "न", "म", "स्", "ते", "\u093f", "ก", "\u0e31", "Ω", "Ж", "ש", "ع"},
	{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>", "<think>", "</think>", "<tool_call>", "<|", "|>", "<|im_", "<|reserved_special_token_3|>"},
	{"\x00", "\x07", "\x1b", "\x7f", "\ufffd", "\u200b", "\ufeff", "→", "∑", "€", "©", "™", "\U0001d400"},
}

// generatedCorpus returns n strings made of a seeded random mix of the
// corpus pieces, each from 1 to maxParts parts.
func generatedCorpus(seed uint64, n, maxParts int) []string {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		parts := 1 + rng.IntN(maxParts)
		// Bias each string towards a few kinds so runs of one class occur.
		kinds := []int{rng.IntN(len(corpusPieces)), rng.IntN(len(corpusPieces)), rng.IntN(len(corpusPieces))}
		for range parts {
			k := kinds[rng.IntN(len(kinds))]
			if rng.IntN(4) == 0 {
				k = rng.IntN(len(corpusPieces))
			}
			p := corpusPieces[k]
			b.WriteString(p[rng.IntN(len(p))])
		}
		out[i] = b.String()
	}
	return out
}

// referenceCorpus is the full corpus compared against the reference: the
// hand-written cases, 600 generated strings, and a few long ones.
func referenceCorpus() []string {
	out := append([]string(nil), handCorpus...)
	out = append(out, generatedCorpus(1, 600, 30)...)
	out = append(out, generatedCorpus(2, 8, 2000)...)
	return out
}
