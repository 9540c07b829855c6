package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// fetch does one HTTP(S) request — with a bearer token from a file and
// a CA bundle when given (e.g. a pod's service account token and CA) — and
// prints the response body. A status other than 2xx fails (exit 1) after
// printing the body.
func (b *box) fetch(c *config) (int, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return 1, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return 1, fmt.Errorf("%s: no certificate", c.caFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	method, body := http.MethodGet, io.Reader(nil)
	if c.postData != "" {
		method, body = http.MethodPost, strings.NewReader(c.postData)
	}
	req, err := http.NewRequest(method, c.url, body)
	if err != nil {
		return 1, err
	}
	if c.postData != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.bearer != "" {
		tok, err := os.ReadFile(c.bearer)
		if err != nil {
			return 1, err
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 1, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	b.logf("%s", out)
	if err != nil {
		return 1, err
	}
	if resp.StatusCode/100 != 2 {
		return 1, errors.New(resp.Status)
	}
	return 0, nil
}
