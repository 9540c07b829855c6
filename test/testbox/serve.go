package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"time"
)

// server is the HTTP server of serve --http, --https or --grpc. Every
// request is logged ("testbox serve: GET /path"). Health fails from
// failAfter after the start on (0: never): HTTP answers 503, the gRPC
// health service NOT_SERVING.
func (b *box) server(kind string, failAfter time.Duration) (*http.Server, error) {
	start := time.Now()
	failing := func() bool { return failAfter > 0 && time.Since(start) >= failAfter }
	var h http.Handler
	switch kind {
	case "grpc":
		h = grpcHealth(failing)
	default:
		ok := okHandler()
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if failing() {
				http.Error(w, "failing", http.StatusServiceUnavailable)
				return
			}
			ok.ServeHTTP(w, r)
		})
	}
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.logf("testbox serve: %s %s", r.Method, r.URL.RequestURI())
		h.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: logged, ReadHeaderTimeout: 10 * time.Second}
	switch kind {
	case "grpc":
		var p http.Protocols
		p.SetUnencryptedHTTP2(true) // gRPC speaks HTTP/2 with prior knowledge
		srv.Protocols = &p
	case "https":
		cert, err := selfSigned()
		if err != nil {
			return nil, err
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	return srv, nil
}

// selfSigned makes a throw-away certificate for the HTTPS server.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testbox"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// gRPC health protocol (grpc.health.v1.Health/Check), by hand: testbox
// uses the standard library only.
const (
	healthCheckPath = "/grpc.health.v1.Health/Check"
	servingStatus   = 1 // HealthCheckResponse.SERVING
	notServing      = 2 // HealthCheckResponse.NOT_SERVING
	grpcUnimpl      = "12"
)

// grpcHealth answers Check for every service: SERVING, or NOT_SERVING
// once failing; other methods are Unimplemented.
func grpcHealth(failing func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		if r.ProtoMajor != 2 || r.Method != http.MethodPost || r.URL.Path != healthCheckPath {
			w.Header().Set("Grpc-Status", grpcUnimpl)
			w.Header().Set("Grpc-Message", "unknown method "+r.URL.Path)
			w.WriteHeader(http.StatusOK)
			return
		}
		// The request (a length-prefixed HealthCheckRequest) names the
		// service; every service has the same health here.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<16))
		status := byte(servingStatus)
		if failing() {
			status = notServing
		}
		msg := []byte{0x08, status} // field 1 (status), varint
		frame := make([]byte, 5, 5+len(msg))
		binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(frame, msg...))
		w.Header().Set("Grpc-Status", "0")
		w.Header().Set("Grpc-Message", "")
	})
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
}
