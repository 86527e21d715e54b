package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-telegram/bot"
)

// apiDoer carries every HTTP request to the Bot API: the library's (it is the
// library's HttpClient) and the adapter's own getUpdates and downloads.
//
// It turns an HTTP 5xx into a *serverError. The library ignores the status
// and decodes the body, so a 502 from a proxy would otherwise surface as an
// opaque decode error, and a JSON 500 as an untyped one; with a typed error
// the retry policy can tell "Telegram is having trouble, retry" apart from
// "this request is wrong". It also scrubs the token from transport errors.
type apiDoer struct {
	hc    *http.Client
	token string
	base  string
}

// serverError is a 5xx answer from the Bot API or a proxy in front of it.
type serverError struct {
	status int
	desc   string
}

func (e *serverError) Error() string {
	if e.desc == "" {
		return fmt.Sprintf("telegram server error %d", e.status)
	}
	return fmt.Sprintf("telegram server error %d: %s", e.status, e.desc)
}

// Do implements bot.HttpClient.
func (d *apiDoer) Do(req *http.Request) (*http.Response, error) {
	// The library streams its multipart body through an io.Pipe, which
	// net/http sends chunked, one write per part. Bodies are small (a
	// voice note is at most 1 MiB here), so buffer them and send one
	// request with a Content-Length: measurably cheaper under load.
	if req.Body != nil && req.ContentLength <= 0 {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, d.redact(err)
	}
	if resp.StatusCode >= 500 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		var env struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal(body, &env)
		return nil, &serverError{status: resp.StatusCode, desc: env.Description}
	}
	return resp, nil
}

// redact removes the token from the URL a transport error carries.
func (d *apiDoer) redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: strings.ReplaceAll(ue.URL, d.token, "<token>"), Err: ue.Err}
	}
	return err
}

// envelope is the Bot API's answer to every method.
type envelope struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// apiErr maps a failed envelope onto the library's error values, so that one
// classifier (retry.go) serves the library's calls and ours.
func apiErr(method string, e *envelope) error {
	switch e.ErrorCode {
	case http.StatusTooManyRequests:
		return &bot.TooManyRequestsError{Message: fmt.Sprintf("%s, %s", bot.ErrorTooManyRequests, e.Description), RetryAfter: e.Parameters.RetryAfter}
	case http.StatusBadRequest:
		return fmt.Errorf("%s: %w, %s", method, bot.ErrorBadRequest, e.Description)
	case http.StatusUnauthorized:
		return fmt.Errorf("%s: %w, %s", method, bot.ErrorUnauthorized, e.Description)
	case http.StatusForbidden:
		return fmt.Errorf("%s: %w, %s", method, bot.ErrorForbidden, e.Description)
	case http.StatusNotFound:
		return fmt.Errorf("%s: %w, %s", method, bot.ErrorNotFound, e.Description)
	case http.StatusConflict:
		return fmt.Errorf("%s: %w, %s", method, bot.ErrorConflict, e.Description)
	}
	if e.ErrorCode >= 500 {
		return &serverError{status: e.ErrorCode, desc: e.Description}
	}
	return fmt.Errorf("%s: error %d: %s", method, e.ErrorCode, e.Description)
}

// call performs one Bot API method with string fields, in the same multipart
// wire format the library uses, and decodes its result into dest. The
// library keeps its request machinery unexported, and getUpdates is not among
// its public methods, so the polling loop needs this.
func (d *apiDoer) call(ctx context.Context, method string, fields map[string]string, dest any) error {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range fields {
		if err := w.WriteField(k, v); err != nil {
			return fmt.Errorf("%s: build form: %w", method, err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("%s: build form: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.base+"/bot"+d.token+"/"+method, &body)
	if err != nil {
		return fmt.Errorf("%s: %w", method, d.redact(err))
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := d.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", method, err)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s: answer is not Bot API JSON (HTTP %d): %w", method, resp.StatusCode, err)
	}
	if !env.OK {
		return apiErr(method, &env)
	}
	if dest != nil {
		if err := json.Unmarshal(env.Result, dest); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
	}
	return nil
}

// errTooLarge is returned by download for a file over its limit.
var errTooLarge = errors.New("file too large")

// download fetches a file by its getFile path, refusing more than limit bytes.
func (d *apiDoer) download(ctx context.Context, path string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+"/file/bot"+d.token+"/"+path, nil)
	if err != nil {
		return nil, fmt.Errorf("download: %w", d.redact(err))
	}
	resp, err := d.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download: HTTP %d", resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("download: %d bytes: %w", resp.ContentLength, errTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("download: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("download: over %d bytes: %w", limit, errTooLarge)
	}
	return data, nil
}
