package options

func (f *KubeletFlags) AddFlags(mainfs *pflag.FlagSet) {
	fs := pflag.NewFlagSet("", pflag.ExitOnError)
	addContainerRuntimeFlags(fs, &f.ContainerRuntimeOptions)
	f.addOSFlags(fs)
	fs.StringVar(&f.KubeConfig, "kubeconfig", f.KubeConfig, "x")
	bindable := cliflag.ConfigurationMap(f.NodeLabels)
	fs.Var(&bindable, "node-labels", "x")
	fs.Int32Var(&f.MaxContainerCount, "maximum-dead-containers", f.MaxContainerCount, "x")
	fs.MarkDeprecated("maximum-dead-containers", "Use --eviction-hard instead.")
}

func addContainerRuntimeFlags(fs *pflag.FlagSet, o *ContainerRuntimeOptions) {
	fs.StringVar(&o.RuntimeCgroups, "runtime-cgroups", o.RuntimeCgroups, "x")
}

func AddKubeletConfigFlags(mainfs *pflag.FlagSet, c *kubeletconfigapi.KubeletConfiguration) {
	fs := pflag.NewFlagSet("", pflag.ExitOnError)
	defer func() {
		deprecated := "Set it in the config file."
		notDeprecated := map[string]bool{
			"v":           true,
			"provider-id": true,
		}
		_ = deprecated
		_ = notDeprecated
	}()
	fs.BoolVar(&c.EnableServer, "enable-server", c.EnableServer, "x")
	fs.Var(&utilflag.IPVar{Val: &c.Address}, "address", "x")
	fs.DurationVar(&c.SyncFrequency.Duration, "sync-frequency", c.SyncFrequency.Duration, "x")
	fs.Var(cliflag.NewMapStringString(&c.SystemReserved), "system-reserved", "x")
	fs.StringVar(&c.ProviderID, "provider-id", c.ProviderID, "x")
	logsapi.AddFlags(&c.Logging, fs)
}
