package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

// ToolName is an op's MCP tool name (the op's name: group.member).
func ToolName(op ops.Op) string { return op.Name }

// MCPServer is the plane as MCP tools for caller c: one tool per op, its description the
// op's doc comment, its input schema the request type's. A call runs Plane.Call, as every
// face does; a refusal is a tool error naming its code.
func (p *Plane) MCPServer(c Caller) (*mcp.Server, error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "universe-k8s-plane", Version: "v1"}, nil)
	for _, op := range ops.All {
		in, err := schemaOf(op.Request)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(in.Value)
		if err != nil {
			return nil, err
		}
		name := op.Name
		tool := &mcp.Tool{Name: ToolName(op), Description: op.Doc(), InputSchema: json.RawMessage(raw),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: !op.Mutating, Title: name}}
		if op.Mutating {
			destructive := strings.HasSuffix(name, ".delete") || name == "nodes.cordon" || name == "clusters.deregister"
			tool.Annotations.DestructiveHint = &destructive
		}
		s.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := []byte(req.Params.Arguments)
			rep, err := p.Call(ctx, c, name, args)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					e = errorf(CodeFailed, "%v", err)
				}
				body, _ := json.Marshal(ops.Error{Code: e.Code, Message: e.Msg})
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}, nil
			}
			body, err := json.Marshal(rep)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}, StructuredContent: json.RawMessage(body)}, nil
		})
	}
	return s, nil
}

// MCPHandler serves the MCP tools over streamable HTTP, stateless: every request is its
// own session, made for the caller its bearer token authenticated (Handler's auth runs
// first), so a tool call never acts as another request's caller.
func (p *Plane) MCPHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		c, ok := CallerFrom(r.Context())
		if !ok {
			return nil
		}
		s, err := p.MCPServer(c)
		if err != nil {
			return nil
		}
		return s
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}
