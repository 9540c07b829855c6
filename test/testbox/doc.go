// Command testbox is the workload of kernelet's tests: the entrypoint of the
// test image registry.kernelet.test/testbox:v1 (at /testbox), the pause
// process of registry.kernelet.test/pause:3.10, and bin/testbox for tests on
// the host. It is static (no cgo) and uses the standard library only.
//
// Each mode is a sub-command and logs one line to stdout when it starts:
//
//	testbox sleep [--for D]                  sleep (forever by default); exit 0 on SIGTERM/SIGINT
//	testbox pause                            sandbox pause process: reap zombies; exit 0 on SIGTERM/SIGINT
//	testbox trap-term [--exit-after D]       on SIGTERM wait D, then exit 0
//	testbox alloc --mib N [--first F] [--rate R] [--hold] [--term-after D]
//	                                         allocate and touch N MiB: F at once, the rest at
//	                                         R MiB/s (0: at once); a signal ends it, or with
//	                                         --term-after D only D later (going on meanwhile);
//	                                         exit 0 when done, or keep it with --hold
//	testbox fork --n N [--rate R] [--exec 'PROG ARGS'] [--for D]
//	                                         start N child processes, R per second (0: at
//	                                         once), that sleep (re-exec of itself) or run
//	                                         PROG ARGS; on SIGTERM (or after D) stop them
//	                                         and exit 0
//	testbox write --mib N --file PATH [--rate R] [--sync] [--reread] [--hold]
//	                                         write N MiB to PATH at R MiB/s (0: at once; fsync
//	                                         with --sync), exit 0;
//	                                         with --reread read it again and again, with --hold
//	                                         stay, until SIGTERM
//	testbox serve --http ADDR | --https ADDR | --grpc ADDR | --tcp ADDR [--fail-after D]
//	                                         HTTP(S): 200 "ok" on every path (HTTPS with a
//	                                         self-signed certificate), each request logged;
//	                                         gRPC: the grpc.health.v1 Check service (plaintext
//	                                         HTTP/2), SERVING; TCP: echo. From D after the start
//	                                         on, HTTP(S) answers 503 and gRPC NOT_SERVING
//	testbox exit --code N [--after D]        exit N after D (at once on SIGTERM)
//	testbox fetch --url URL [--bearer-file F] [--ca-file F] [--post-data S]
//	                                         one HTTP(S) request (POST with --post-data),
//	                                         bearer token and CA bundle from files; print
//	                                         the body, exit 1 unless the status is 2xx
//
// Exit status 2 means a usage error, 1 a failure of the mode itself.
package main
