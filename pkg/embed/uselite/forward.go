package uselite

import (
	"context"
	"math"
	"sync"

	"github.com/docrepo/docrepo/pkg/embed/bert"
)

// workspace holds the buffers of one forward pass (up to about 21 MB),
// kept by the model for the next pass: a steady stream of batches then
// allocates nothing big. (A sync.Pool would drop them at every garbage
// collection, and allocating them again brings the next one sooner.)
type workspace struct {
	x, y, res, qkv, ctx, inter []float32
}

// keptWorkspaces is how many idle workspaces a model keeps.
const keptWorkspaces = 2

func (m *Model) getWorkspace() *workspace {
	m.wsMu.Lock()
	defer m.wsMu.Unlock()
	if n := len(m.wsFree); n > 0 {
		ws := m.wsFree[n-1]
		m.wsFree = m.wsFree[:n-1]
		return ws
	}
	return new(workspace)
}

func (m *Model) putWorkspace(ws *workspace) {
	m.wsMu.Lock()
	defer m.wsMu.Unlock()
	if len(m.wsFree) < keptWorkspaces {
		m.wsFree = append(m.wsFree, ws)
	}
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// forward embeds one batch into out (len(seqs) vectors).
func (m *Model) forward(ctx context.Context, seqs [][]int32, out [][]float32) error {
	offs := make([]int, len(seqs)+1)
	for i, s := range seqs {
		offs[i+1] = offs[i] + min(len(s), m.maxLen)
	}
	rows := offs[len(seqs)]
	ws := m.getWorkspace()
	defer m.putWorkspace(ws)

	// Input: each token's embedding twice plus the timing signal of its
	// position (the graph's Layer_0/add of the scattered embeddings and
	// the scattered embeddings-plus-timing).
	E := m.embDim
	x := grow(ws.x, rows*Dimensions)
	bert.ParallelRows(rows, func(r0, r1 int) {
		s := 0
		for r := r0; r < r1; r++ {
			for r >= offs[s+1] {
				s++
			}
			p := r - offs[s]
			e := m.emb[int(seqs[s][p])*E : (int(seqs[s][p])+1)*E]
			t := m.timing[p*E : (p+1)*E]
			row := x[r*E : (r+1)*E]
			for j := range row {
				row[j] = e[j] + (e[j] + t[j])
			}
		}
	})

	for li := range m.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		ly := &m.layers[li]
		in := ly.in
		// Pre-norm attention block: h = residual(x) + Out(Attn(LN(x))).
		y := grow(ws.y, rows*in)
		bert.ParallelRows(rows, func(r0, r1 int) {
			for r := r0; r < r1; r++ {
				bert.LayerNorm(y[r*in:(r+1)*in], x[r*in:(r+1)*in], ly.lnW, ly.lnB, m.lnEps)
			}
		})
		qkv := grow(ws.qkv, rows*3*in)
		ly.qkv.apply(qkv, y, rows, epiStore, nil)
		att := grow(ws.ctx, rows*in)
		m.attention(att, qkv, offs, ly)
		h := grow(ws.res, rows*Dimensions)
		if ly.res != nil {
			ly.res.apply(h, x, rows, epiStore, nil)
		} else {
			copy(h, x[:rows*Dimensions])
		}
		tmp := grow(ws.inter, rows*max(Dimensions, ly.inter))
		ly.attnOut.apply(h, att, rows, epiAdd, tmp)

		// Pre-norm feed-forward block: h += W2 ReLU(W1 LN(h) + b1) + b2.
		z := grow(y, rows*Dimensions)
		bert.ParallelRows(rows, func(r0, r1 int) {
			for r := r0; r < r1; r++ {
				bert.LayerNorm(z[r*Dimensions:(r+1)*Dimensions], h[r*Dimensions:(r+1)*Dimensions], ly.ffnLNW, ly.ffnLNB, m.lnEps)
			}
		})
		inter := tmp[:rows*ly.inter]
		ly.ffn1.apply(inter, z, rows, epiReLU, nil)
		ly.ffn2.apply(h, inter, rows, epiAdd, qkv) // qkv is free again (3·in ≥ Dimensions)

		ws.y, ws.qkv, ws.ctx, ws.inter = z, qkv, att, tmp
		ws.x, ws.res = h, x // h is the next layer's input
		x = h
	}

	// Mean over each sequence's tokens (at least one in the divisor), then
	// tanh(W · mean + b) and L2 normalisation.
	pooled := make([]float32, len(seqs)*Dimensions)
	for s := range seqs {
		n := offs[s+1] - offs[s]
		dst := pooled[s*Dimensions : (s+1)*Dimensions]
		acc := make([]float64, Dimensions)
		for r := offs[s]; r < offs[s+1]; r++ {
			for j, v := range x[r*Dimensions : (r+1)*Dimensions] {
				acc[j] += float64(v)
			}
		}
		div := float64(max(n, 1))
		for j := range dst {
			dst[j] = float32(acc[j] / div)
		}
	}
	final := make([]float32, len(seqs)*Dimensions)
	m.tanh.apply(final, pooled, len(seqs), epiStore, nil)
	for s := range seqs {
		v := final[s*Dimensions : (s+1)*Dimensions]
		var ss float64
		for j := range v {
			v[j] = float32(bert.Tanh(float64(v[j])))
			ss += float64(v[j]) * float64(v[j])
		}
		inv := 1 / math.Sqrt(max(ss, m.l2Eps))
		for j := range v {
			out[s][j] = float32(float64(v[j]) * inv)
		}
	}
	return nil
}

// attnScratch is the per-task working memory of attention.
type attnScratch struct{ q, k, vt, p, o []float32 }

// attention computes, for every sequence and head, softmax(s·Q Kᵀ) V
// with each sequence attending to its own tokens only; qkv rows hold
// [Q | K | V], each ly.in wide, and dst gets the heads side by side.
// With the packed kernel, K and V are packed into panels per head (K
// padded with zero keys to whole panels, which the softmax leaves out);
// otherwise bert's tile kernel computes both products.
func (m *Model) attention(dst, qkv []float32, offs []int, ly *layer) {
	in, d, heads := ly.in, ly.headDim, ly.heads
	nseq := len(offs) - 1
	kn := m.kern
	packed := kn.name != "" && d%kn.width == 0
	bert.Parallel(nseq*heads, func(t int) {
		s, h := t/heads, t%heads
		o, L := offs[s], offs[s+1]-offs[s]
		if L == 0 {
			return
		}
		sc, _ := attnPool.Get().(*attnScratch)
		if sc == nil {
			sc = new(attnScratch)
		}
		defer attnPool.Put(sc)
		if packed {
			pw := kn.width
			Lp := (L + pw - 1) / pw * pw
			sc.q, sc.k, sc.vt, sc.p = grow(sc.q, L*d), grow(sc.k, Lp*d), grow(sc.vt, L*d), grow(sc.p, L*Lp)
			clear(sc.k[L/pw*pw*d:]) // the padding keys of the last panel
			for i := range L {
				row := qkv[(o+i)*3*in:]
				for j, v := range row[h*d : (h+1)*d] {
					sc.q[i*d+j] = v * ly.scale // the graph scales Q, not the scores
				}
				kp := sc.k[i/pw*pw*d+i%pw:]
				for p, v := range row[in+h*d : in+(h+1)*d] {
					kp[p*pw] = v
				}
				for c, v := range row[2*in+h*d : 2*in+(h+1)*d] {
					sc.vt[c/pw*L*pw+i*pw+c%pw] = v
				}
			}
			kn.tile(sc.p, Lp, sc.q, d, L, d, sc.k, 0, Lp/pw, m.zeros, epiStore)
			for i := range L {
				softmax(sc.p[i*Lp : i*Lp+L])
			}
			kn.tile(dst[o*in+h*d:], in, sc.p, Lp, L, L, sc.vt, 0, d/pw, m.zeros, epiStore)
			return
		}
		sc.q, sc.k, sc.vt = grow(sc.q, L*d), grow(sc.k, L*d), grow(sc.vt, d*L)
		sc.p, sc.o = grow(sc.p, L*L), grow(sc.o, L*d)
		for i := range L {
			row := qkv[(o+i)*3*in:]
			for j, v := range row[h*d : (h+1)*d] {
				sc.q[i*d+j] = v * ly.scale
			}
			copy(sc.k[i*d:(i+1)*d], row[in+h*d:])
			for j, v := range row[2*in+h*d : 2*in+(h+1)*d] {
				sc.vt[j*L+i] = v
			}
		}
		bert.MatMulTile(sc.p, sc.q, sc.k, L, d, 0, L, 0, L, nil)
		for i := range L {
			softmax(sc.p[i*L : (i+1)*L])
		}
		bert.MatMulTile(sc.o, sc.p, sc.vt, d, L, 0, L, 0, d, nil)
		for i := range L {
			copy(dst[(o+i)*in+h*d:(o+i)*in+(h+1)*d], sc.o[i*d:(i+1)*d])
		}
	})
}

var attnPool sync.Pool

// softmax replaces row with its softmax.
func softmax(row []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range row {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range row {
		e := bert.Exp(float64(v - mx))
		row[i] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	for i := range row {
		row[i] *= inv
	}
}
