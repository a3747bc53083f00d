module github.com/agentrl/agentrl

go 1.26

require go.yaml.in/yaml/v3 v3.0.6

require (
	github.com/sashabaranov/go-openai v1.43.0 // indirect
	go.starlark.net v0.0.0-20260908191801-89a6a09411d5 // indirect
	golang.org/x/sys v0.42.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
	gonum.org/v1/netlib v0.0.0-20220323200511-14de99971b2d // indirect
)
