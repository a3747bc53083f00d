package chattemplate_test

import (
	"fmt"
	"log"

	"github.com/agentrl/agentrl/text/chattemplate"
	"github.com/agentrl/agentrl/text/hftok"
)

func Example() {
	// Normally: cfg, err := hftok.LoadConfig("tokenizer_config.json").
	cfg, err := hftok.ParseConfig([]byte(`{
		"eos_token": "<|im_end|>",
		"chat_template": "{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}{%- endif %}"
	}`))
	if err != nil {
		log.Fatal(err)
	}
	tmpl, err := chattemplate.FromConfig(*cfg)
	if err != nil {
		log.Fatal(err)
	}
	noThinking := false
	text, err := tmpl.Render(chattemplate.Context{
		Messages: []chattemplate.Message{
			{Role: "system", Content: "You are terse."},
			{Role: "user", Content: "Capital of France?"},
		},
		AddGenerationPrompt: true,
		EnableThinking:      &noThinking,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(text)
	// Output:
	// <|im_start|>system
	// You are terse.<|im_end|>
	// <|im_start|>user
	// Capital of France?<|im_end|>
	// <|im_start|>assistant
	// <think>
	//
	// </think>
}

func ExampleParse_errors() {
	_, err := chattemplate.Parse("{% for m in messages %}\n{{ m.content | nosuch }}\n{% endfor %}")
	fmt.Println(err)

	tmpl, _ := chattemplate.Parse("{% if messages[0].role != 'system' %}\n{{ raise_exception('Conversations must start with a system message.') }}\n{% endif %}")
	_, err = tmpl.Render(chattemplate.Context{Messages: []chattemplate.Message{{Role: "user", Content: "hi"}}})
	fmt.Println(err)
	// Output:
	// chattemplate: line 2: no filter named 'nosuch'
	// chattemplate: line 2: Conversations must start with a system message.
}
