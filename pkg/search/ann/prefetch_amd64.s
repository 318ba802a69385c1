#include "textflag.h"

// func prefetchTile(p *int8)
TEXT ·prefetchTile(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	RET
