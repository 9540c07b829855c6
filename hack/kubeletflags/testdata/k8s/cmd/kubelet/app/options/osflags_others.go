package options

func (f *KubeletFlags) addOSFlags(fs *pflag.FlagSet) {
}
