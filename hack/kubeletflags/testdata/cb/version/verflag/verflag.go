package verflag

const versionFlagName = "version"
