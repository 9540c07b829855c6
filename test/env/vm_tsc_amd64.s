#include "textflag.h"

// func vmRDTSC() uint64
TEXT ·vmRDTSC(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
