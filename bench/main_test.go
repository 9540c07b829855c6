package bench

import (
	"os"
	"testing"

	"github.com/kernelet/kernelet/test/env"
)

func TestMain(m *testing.M) { os.Exit(env.Main(m)) }
