package app

func NewKubeletCommand() *cobra.Command {
	cleanFlagSet := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	cleanFlagSet.BoolP("help", "h", false, "help")
	return nil
}
