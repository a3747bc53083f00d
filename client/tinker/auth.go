package tinker

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Authentication, as the Tinker SDK 0.25.0 does it
// (lib/_auth_token_provider.py, lib/_jwt_auth.py,
// lib/internal_client_holder.py):
//
//   - The credential goes in the X-API-Key header. The SDK takes an API
//     key (api_key or $TINKER_API_KEY) that starts with "tml-", or a JWT
//     ("eyJ…"); otherwise it runs $TINKER_CREDENTIAL_CMD and sends what
//     the command prints.
//   - client/config is asked first, with that credential. When its reply
//     sets pjwt_auth_enabled, the credential is exchanged (POST
//     auth/token, body {}) for a short-lived JWT, {"jwt": …}, which every
//     later request sends instead, and which is exchanged again before it
//     expires (its exp claim). With credential_default_source
//     "credential_cmd" the credential exchanged is the command's output
//     (unless the key is itself a JWT).
//
// The client accepts a key of any form (agentrl's own server takes any
// key); a key the SDK would refuse is reported once in the log.

// jwtRefreshBefore is how long before its expiry a JWT is exchanged again
// (the SDK's background refresh margin).
const jwtRefreshBefore = 5 * time.Minute

// credentialCmdTimeout bounds one run of the credential command.
const credentialCmdTimeout = 60 * time.Second

// authState is the client's credential and, with the JWT exchange, the
// current token.
type authState struct {
	c      *Client
	apiKey string
	cmd    string // the credential command ($TINKER_CREDENTIAL_CMD)

	mu      sync.Mutex
	jwt     bool   // the server asked for the exchange
	fromCmd bool   // credential_default_source "credential_cmd"
	token   string // the current JWT
	expires time.Time
	fetched time.Time
}

// isJWT reports whether a credential is a JWT (the SDK's test).
func isJWT(s string) bool { return strings.HasPrefix(s, "eyJ") }

// sdkAcceptsKey reports whether the SDK would take key as an API key.
func sdkAcceptsKey(key string) bool { return strings.HasPrefix(key, "tml-") || isJWT(key) }

// credential returns what to send, or to exchange for a JWT: the key,
// else the command's output (the SDK's resolve_auth_provider); "" when
// there is neither.
func (a *authState) credential(ctx context.Context, preferCmd bool) (string, error) {
	if isJWT(a.apiKey) {
		return a.apiKey, nil
	}
	if preferCmd {
		if a.cmd == "" {
			return "", errors.New("tinker: the server requires dynamic credentials (credential_default_source credential_cmd): set TINKER_CREDENTIAL_CMD (Options.CredentialCmd) to a command that prints one")
		}
		return a.runCmd(ctx)
	}
	if a.apiKey != "" || a.cmd == "" {
		return a.apiKey, nil
	}
	return a.runCmd(ctx)
}

// runCmd runs the credential command and returns its trimmed output.
func (a *authState) runCmd(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, credentialCmdTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "sh", "-c", a.cmd)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("tinker: running the credential command (TINKER_CREDENTIAL_CMD): %w", err)
	}
	cred := strings.TrimSpace(out.String())
	if cred == "" {
		return "", errors.New("tinker: the credential command (TINKER_CREDENTIAL_CMD) printed an empty credential")
	}
	return cred, nil
}

// enableJWT switches to the exchange, as client/config asked, and makes
// the first one.
func (a *authState) enableJWT(ctx context.Context, fromCmd bool) error {
	a.mu.Lock()
	a.jwt, a.fromCmd = true, fromCmd
	a.mu.Unlock()
	_, err := a.header(ctx)
	return err
}

// header returns the X-API-Key value for a request: the key, or with the
// exchange a JWT valid for at least jwtRefreshBefore when one can be had
// (else the current one while it lasts).
func (a *authState) header(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.jwt {
		return a.apiKey, nil
	}
	now := time.Now()
	fresh := func() bool {
		if a.token == "" {
			return false
		}
		if a.expires.IsZero() { // no exp claim: exchanged again every refresh margin
			return now.Sub(a.fetched) < jwtRefreshBefore
		}
		return a.expires.Sub(now) > jwtRefreshBefore
	}
	if fresh() {
		return a.token, nil
	}
	tok, err := a.exchange(ctx)
	if err != nil {
		if a.token != "" && (a.expires.IsZero() || now.Before(a.expires)) {
			a.c.log.Warn("tinker: renewing the JWT failed; using the current one until it expires", "expires", a.expires, "err", err)
			return a.token, nil
		}
		return "", err
	}
	a.token, a.fetched = tok, now
	a.expires, _ = jwtExpiry(tok)
	return tok, nil
}

// exchange trades the credential for a JWT (POST auth/token); a.mu is
// held.
func (a *authState) exchange(ctx context.Context) (string, error) {
	cred, err := a.credential(ctx, a.fromCmd)
	if err != nil {
		return "", err
	}
	r, err := a.c.doCall(ctx, call{method: http.MethodPost, route: "auth/token", body: []byte("{}"), key: &cred})
	if err != nil {
		return "", fmt.Errorf("tinker: exchanging the credential for a JWT: %w", err)
	}
	var resp AuthTokenResponse
	if err := decode("auth/token", r.data, &resp); err != nil {
		return "", err
	}
	if resp.JWT == "" {
		return "", malformed("auth/token", "reply has no jwt")
	}
	return resp.JWT, nil
}

// jwtExpiry reads a JWT's exp claim, without checking its signature (the
// token comes from the server, as the SDK reads it).
func jwtExpiry(tok string) (time.Time, error) {
	parts := strings.Split(tok, ".")
	if len(parts) < 2 {
		return time.Time{}, errors.New("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, err
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, errors.New("no exp claim")
	}
	sec := int64(*claims.Exp)
	return time.Unix(sec, int64((*claims.Exp-float64(sec))*1e9)), nil
}
