package cadvisorflags

const (
	HousekeepingInterval = "housekeeping_interval"
)
