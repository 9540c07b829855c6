package options

func addCadvisorFlags(fs *pflag.FlagSet) {
	global := flag.CommandLine
	local := pflag.NewFlagSet(os.Args[0], pflag.ExitOnError)
	register(global, local, cadvisorflags.HousekeepingInterval)
	fs.AddFlagSet(local)
}
