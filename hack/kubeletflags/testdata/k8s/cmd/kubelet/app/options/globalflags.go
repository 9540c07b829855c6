package options

func AddGlobalFlags(fs *pflag.FlagSet) {
	addCadvisorFlags(fs)
	verflag.AddFlags(fs)
}
