// Package watchdog is the SystemdWatchdog feature: the agent tells
// systemd it is alive, as kubelet does, and systemd restarts it when it
// stops saying so.
//
// When systemd gave the service a watchdog (WatchdogSec: WATCHDOG_USEC,
// and WATCHDOG_PID when set naming this process; go-systemd's daemon
// package reads them), Interval is half its timeout and Run asks the
// health checks (the /healthz ones) at that interval, sending WATCHDOG=1
// only when every check passes; a failing check is logged and systemd is
// not told, so a stuck agent is killed and restarted (Restart=). A
// notification that fails is tried once more 1 s later. A watchdog
// timeout of 1 s or less, or one that cannot be read, is an error: the
// agent does not start (kubelet's messages). Without a watchdog nothing
// runs. Ready sends READY=1 once the agent serves (nothing without
// NOTIFY_SOCKET), as kubelet does after its start.
package watchdog
