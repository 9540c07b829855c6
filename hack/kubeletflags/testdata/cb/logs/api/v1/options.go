package v1

const LogFlushFreqFlagName = "log-flush-frequency"

func addFlags(c *LoggingConfiguration, fs flagSet) {
	fs.DurationVar(&c.FlushFrequency.Duration.Duration, LogFlushFreqFlagName, c.FlushFrequency.Duration.Duration, "x")
	fs.VarP(VerbosityLevelPflag(&c.Verbosity), "v", "v", "x")
	fs.Var(&c.Options.JSON.InfoBufferSize, "log-json-info-buffer-size", "x")
}
