// Command verifier checks thirteen's transparency log with Go's reference code: the signed
// notes with golang.org/x/mod/sumdb/note, the tree and its proofs with
// golang.org/x/mod/sumdb/tlog, and a witness's cosignature (C2SP tlog-cosignature, which x/mod
// 0.7.0 predates) with crypto/ed25519 directly. Nothing here comes from thirteen.
//
// Usage: verifier -dir DIR [-tiles URL], where DIR holds what tests/interop/test_go_verifier.py
// took from a running thirteen serve:
//
//	log.pub      the log's public key (a vkey)
//	log.key      the log's private key (optional): the checkpoint is signed again with it
//	witness.pub  a witness's public key (optional): its cosignature must be on the checkpoint
//	checkpoint   the latest signed checkpoint, as GetCheckpoint served it
//	leaves       every leaf of that tree, in order: "<event position> <base64 leaf data>"
//	proofs.json  earlier checkpoints, inclusion and consistency proofs as the server gave them
//
// and URL is where that server serves the log as C2SP tlog-tiles (tiles.go).
//
// It prints one line per check ("ok   ..." or "FAIL ...") and exits with status 1 when any
// check fails, 2 when its input cannot be read.
package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Proofs is proofs.json: what the server answered, copied without recomputing anything.
type Proofs struct {
	Checkpoints []string      `json:"checkpoints"` // signed checkpoints kept while the log grew
	Inclusion   []Inclusion   `json:"inclusion"`
	Consistency []Consistency `json:"consistency"`
}

// Inclusion is one inclusion proof: of the event at Position, leaf Leaf of the tree of Size.
type Inclusion struct {
	Source   string   `json:"source"` // which RPC gave it
	Position int64    `json:"position"`
	Leaf     int64    `json:"leaf"`
	Size     int64    `json:"size"`
	Hashes   [][]byte `json:"hashes"`
	Data     []byte   `json:"data"` // the leaf data of an exported event (absent by position)
}

// Consistency is one consistency proof from the tree of Old leaves to the tree of New.
type Consistency struct {
	Old    int64    `json:"old"`
	New    int64    `json:"new"`
	Hashes [][]byte `json:"hashes"`
}

// Leaf is one line of the leaves file.
type Leaf struct {
	Position int64
	Data     []byte
}

// stored is the tree as Go's sumdb server keeps it: every hash tlog.StoredHashes returns, in
// order, read back by stored hash index.
type stored []tlog.Hash

func (s stored) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(s)) {
			return nil, fmt.Errorf("no stored hash %d", x)
		}
		out[i] = s[x]
	}
	return out, nil
}

var failed = 0

func pass(format string, args ...interface{}) {
	fmt.Printf("ok   "+format+"\n", args...)
}

func fail(format string, args ...interface{}) {
	failed++
	fmt.Printf("FAIL "+format+"\n", args...)
}

func stop(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "verifier: "+format+"\n", args...)
	os.Exit(2)
}

func read(dir, name string) []byte {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		stop("%v", err)
	}
	return data
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

func main() {
	dir := flag.String("dir", "", "the directory the test wrote (see the package comment)")
	tileURL := flag.String("tiles", "", "where the log is served as C2SP tlog-tiles (optional)")
	flag.Parse()
	if *dir == "" || flag.NArg() != 0 {
		stop("usage: verifier -dir DIR [-tiles URL]")
	}

	vkey := strings.TrimSpace(string(read(*dir, "log.pub")))
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		fail("log key: note.NewVerifier refuses %q: %v", vkey, err)
		finish()
	}
	pass("log key %s, key id %08x: note.NewVerifier accepts it (its id is SHA-256(name, 0x0A, 0x01, key)[:4])",
		verifier.Name(), verifier.KeyHash())

	served := read(*dir, "checkpoint")
	opened, tree, err := openCheckpoint(served, verifier)
	if err != nil {
		fail("checkpoint: %v", err)
		finish()
	}
	pass("checkpoint signed by %s (note.Open), origin %s, %d leaves, root %s (tlog.ParseTree of its size and root lines)",
		verifier.Name(), verifier.Name(), tree.N, tree.Hash)

	if exists(*dir, "log.key") {
		resign(opened, served, strings.TrimSpace(string(read(*dir, "log.key"))))
	}

	leaves := readLeaves(*dir)
	tree0 := buildTree(leaves)
	root, err := tlog.TreeHash(int64(len(leaves)), tree0)
	switch {
	case err != nil:
		fail("tree hash: %v", err)
	case int64(len(leaves)) != tree.N:
		fail("tree hash: %d leaves given for a checkpoint of %d", len(leaves), tree.N)
	case root != tree.Hash:
		fail("tree hash: tlog.TreeHash of the %d leaves (tlog.RecordHash of each leaf's data) is %s, the checkpoint says %s",
			len(leaves), root, tree.Hash)
	default:
		pass("tree hash of the %d leaves: tlog.RecordHash of each leaf's data, tlog.StoredHashes, tlog.TreeHash = the checkpoint's root",
			len(leaves))
	}

	var proofs Proofs
	if err := json.Unmarshal(read(*dir, "proofs.json"), &proofs); err != nil {
		stop("proofs.json: %v", err)
	}
	checkpoints(proofs.Checkpoints, verifier, tree0, tree.N)
	inclusions(proofs.Inclusion, leaves, tree0)
	consistencies(proofs.Consistency, tree0, tree.N)

	if exists(*dir, "witness.pub") {
		cosigned(opened, strings.TrimSpace(string(read(*dir, "witness.pub"))))
	}
	if *tileURL != "" {
		tiles(*tileURL, verifier, tree, leaves, proofs)
	}
	finish()
}

func finish() {
	if failed > 0 {
		fmt.Printf("%d check(s) failed\n", failed)
		os.Exit(1)
	}
	fmt.Println("every check passed")
	os.Exit(0)
}

// openCheckpoint verifies a C2SP checkpoint's signature with note.Open and reads its body: the
// origin line (the key's name), then the size and root lines, which are those of a go.sum tree
// note, so tlog.ParseTree reads them once the origin stands in for its fixed first line.
func openCheckpoint(msg []byte, verifier note.Verifier) (*note.Note, tlog.Tree, error) {
	opened, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return nil, tlog.Tree{}, fmt.Errorf("note.Open: %v", err)
	}
	origin, rest, found := strings.Cut(opened.Text, "\n")
	if !found || origin != verifier.Name() {
		return nil, tlog.Tree{}, fmt.Errorf("origin %q is not the log key's name %q", origin, verifier.Name())
	}
	tree, err := tlog.ParseTree([]byte("go.sum database tree\n" + rest))
	if err != nil {
		return nil, tlog.Tree{}, fmt.Errorf("tlog.ParseTree: %v", err)
	}
	return opened, tree, nil
}

// resign signs the checkpoint's text again with the log's private key through note.Sign:
// Ed25519 is deterministic, so the note must be the served one up to the log's signature line.
func resign(opened *note.Note, served []byte, skey string) {
	signer, err := note.NewSigner(skey)
	if err != nil {
		fail("log private key: note.NewSigner refuses it: %v", err)
		return
	}
	ours, err := note.Sign(&note.Note{Text: opened.Text}, signer)
	if err != nil {
		fail("note.Sign: %v", err)
		return
	}
	if !bytes.HasPrefix(served, ours) {
		fail("note.Sign with the log's private key gives %q, the server served %q", ours, served)
		return
	}
	pass("note.Sign with the log's private key (note.NewSigner) gives the served note byte for byte, up to the witnesses' lines")
}

func readLeaves(dir string) []Leaf {
	file, err := os.Open(filepath.Join(dir, "leaves"))
	if err != nil {
		stop("%v", err)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<16), 1<<26)
	var leaves []Leaf
	for scanner.Scan() {
		position, encoded, found := strings.Cut(scanner.Text(), " ")
		at, err1 := strconv.ParseInt(position, 10, 64)
		data, err2 := base64.StdEncoding.DecodeString(encoded)
		if !found || err1 != nil || err2 != nil {
			stop("leaves: line %d is not a position and base64 leaf data", len(leaves)+1)
		}
		if len(leaves) > 0 && at <= leaves[len(leaves)-1].Position {
			stop("leaves: position %d does not follow %d", at, leaves[len(leaves)-1].Position)
		}
		leaves = append(leaves, Leaf{at, data})
	}
	if err := scanner.Err(); err != nil {
		stop("leaves: %v", err)
	}
	return leaves
}

// buildTree appends each leaf as Go's sumdb server does: the hashes tlog.StoredHashes gives
// for record n (its tlog.RecordHash, then the subtrees it completes) are stored in order.
func buildTree(leaves []Leaf) stored {
	var tree stored
	for n, leaf := range leaves {
		hashes, err := tlog.StoredHashes(int64(n), leaf.Data, tree)
		if err != nil {
			stop("tlog.StoredHashes(%d): %v", n, err)
		}
		tree = append(tree, hashes...)
	}
	return tree
}

// treeHash is the root of the first n leaves, by tlog.TreeHash.
func treeHash(tree stored, n int64) (tlog.Hash, error) {
	if n < 1 || tlog.StoredHashIndex(0, n-1) >= int64(len(tree)) {
		return tlog.Hash{}, fmt.Errorf("no tree of %d leaves among the leaves given", n)
	}
	return tlog.TreeHash(n, tree)
}

func hashes(raw [][]byte) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(raw))
	for i, h := range raw {
		if len(h) != tlog.HashSize {
			return nil, fmt.Errorf("hash %d is %d bytes, not %d", i, len(h), tlog.HashSize)
		}
		copy(out[i][:], h)
	}
	return out, nil
}

const shown = 10 // failures named per check; the rest are counted

// checkpoints verifies every earlier checkpoint: its signature, and its root against the tree
// of its size recomputed from the leaves.
func checkpoints(notes []string, verifier note.Verifier, tree stored, latest int64) {
	bad, sizes := 0, map[int64]bool{}
	for _, msg := range notes {
		_, head, err := openCheckpoint([]byte(msg), verifier)
		if err == nil && head.N > latest {
			err = fmt.Errorf("%d leaves, more than the latest checkpoint's %d", head.N, latest)
		}
		if err == nil {
			var root tlog.Hash
			if root, err = treeHash(tree, head.N); err == nil && root != head.Hash {
				err = fmt.Errorf("root %s, tlog.TreeHash of its %d leaves is %s", head.Hash, head.N, root)
			}
		}
		if err != nil {
			if bad++; bad <= shown {
				fail("earlier checkpoint: %v", err)
			}
			continue
		}
		sizes[head.N] = true
	}
	if bad > shown {
		fail("... and %d more earlier checkpoints", bad-shown)
	}
	if bad == 0 {
		pass("%d earlier checkpoints (%d sizes): each signed by the log key (note.Open), each root that of the tree of its size (tlog.TreeHash)",
			len(notes), len(sizes))
	}
}

// inclusions checks each inclusion proof with tlog.CheckRecord against the leaf hash computed
// here from the leaf data and the root of its tree recomputed here; an exported event's leaf
// data must be the log's leaf byte for byte.
func inclusions(proofs []Inclusion, leaves []Leaf, tree stored) {
	bad, sources, first, last := 0, map[string]int{}, int64(-1), int64(-1)
	for _, p := range proofs {
		err := inclusion(p, leaves, tree)
		if err != nil {
			if bad++; bad <= shown {
				fail("inclusion proof (%s) of leaf %d (position %d) in the tree of %d: %v",
					p.Source, p.Leaf, p.Position, p.Size, err)
			}
			continue
		}
		sources[p.Source]++
		if first < 0 || p.Leaf < first {
			first = p.Leaf
		}
		if p.Leaf > last {
			last = p.Leaf
		}
	}
	if bad > shown {
		fail("... and %d more inclusion proofs", bad-shown)
	}
	if bad == 0 {
		var from []string
		for _, source := range []string{"GetInclusionProof", "ExportRound"} {
			from = append(from, fmt.Sprintf("%d from %s", sources[source], source))
		}
		pass("%d inclusion proofs (tlog.CheckRecord), leaves %d to %d: %s; each exported event's leaf data is the log's, byte for byte",
			len(proofs), first, last, strings.Join(from, ", "))
	}
}

func inclusion(p Inclusion, leaves []Leaf, tree stored) error {
	if p.Leaf < 0 || p.Leaf >= int64(len(leaves)) {
		return fmt.Errorf("no such leaf among the %d given", len(leaves))
	}
	leaf := leaves[p.Leaf]
	if leaf.Position != p.Position {
		return fmt.Errorf("the log has the event at position %d there", leaf.Position)
	}
	if p.Data != nil && !bytes.Equal(p.Data, leaf.Data) {
		at := 0
		for at < len(p.Data) && at < len(leaf.Data) && p.Data[at] == leaf.Data[at] {
			at++
		}
		return fmt.Errorf("the exported event's leaf data (%d bytes) is not the log's (%d bytes): they differ from byte %d on",
			len(p.Data), len(leaf.Data), at)
	}
	proof, err := hashes(p.Hashes)
	if err != nil {
		return err
	}
	root, err := treeHash(tree, p.Size)
	if err != nil {
		return err
	}
	return tlog.CheckRecord(proof, p.Size, root, p.Leaf, tlog.RecordHash(leaf.Data))
}

// consistencies checks each consistency proof with tlog.CheckTree between the roots of the two
// trees recomputed here.
func consistencies(proofs []Consistency, tree stored, latest int64) {
	bad, pairs := 0, 0
	for _, p := range proofs {
		err := consistent(p, tree, latest)
		if err != nil {
			if bad++; bad <= shown {
				fail("consistency proof from %d to %d leaves: %v", p.Old, p.New, err)
			}
			continue
		}
		if p.Old != p.New {
			pairs++
		}
	}
	if bad > shown {
		fail("... and %d more consistency proofs", bad-shown)
	}
	if bad == 0 {
		pass("%d consistency proofs (tlog.CheckTree), %d between different sizes, up to %d leaves",
			len(proofs), pairs, latest)
	}
}

func consistent(p Consistency, tree stored, latest int64) error {
	if p.New > latest {
		return fmt.Errorf("beyond the latest checkpoint's %d leaves", latest)
	}
	proof, err := hashes(p.Hashes)
	if err != nil {
		return err
	}
	old, err := treeHash(tree, p.Old)
	if err != nil {
		return err
	}
	root, err := treeHash(tree, p.New)
	if err != nil {
		return err
	}
	return tlog.CheckTree(proof, p.New, root, p.Old, old)
}

// cosigned checks the witness's cosignature line by C2SP tlog-cosignature: a vkey of type
// 0x04 whose key id is SHA-256(name ‖ 0x0A ‖ 0x04 ‖ key)[:4], and a line (left unverified by
// note.Open, which knows type 0x01 only) carrying key id ‖ 8-byte big-endian time ‖ an
// Ed25519 signature of "cosignature/v1\ntime <time>\n" and the checkpoint's text.
func cosigned(opened *note.Note, vkey string) {
	name, id, key, err := witnessKey(vkey)
	if err != nil {
		fail("witness key %q: %v", vkey, err)
		return
	}
	lines := 0
	for _, sig := range opened.UnverifiedSigs {
		if sig.Name != name || sig.Hash != id {
			continue
		}
		lines++
		raw, err := base64.StdEncoding.DecodeString(sig.Base64)
		if err != nil || len(raw) != 4+8+ed25519.SignatureSize {
			fail("cosignature by %s: not a key id, a time and an Ed25519 signature", name)
			return
		}
		time := binary.BigEndian.Uint64(raw[4:12])
		if time >= 1<<63 {
			fail("cosignature by %s: time %d is beyond 2^63 - 1", name, time)
			return
		}
		message := fmt.Sprintf("cosignature/v1\ntime %d\n%s", time, opened.Text)
		if !ed25519.Verify(key, []byte(message), raw[12:]) {
			fail("cosignature by %s (key id %08x, time %d): ed25519.Verify refuses it", name, id, time)
			return
		}
		pass("cosignature by %s, key id %08x = SHA-256(name, 0x0A, 0x04, key)[:4], time %d: ed25519.Verify of cosignature/v1, the time line and the checkpoint",
			name, id, time)
	}
	if lines == 0 {
		fail("cosignature: the checkpoint carries no line by %s with key id %08x", name, id)
	}
}

func witnessKey(vkey string) (string, uint32, ed25519.PublicKey, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 || len(parts[1]) != 8 {
		return "", 0, nil, fmt.Errorf("not NAME+KEYID+KEY")
	}
	id, err := strconv.ParseUint(parts[1], 16, 32)
	if err != nil {
		return "", 0, nil, fmt.Errorf("key id: %v", err)
	}
	material, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(material) != 1+ed25519.PublicKeySize || material[0] != 0x04 {
		return "", 0, nil, fmt.Errorf("not a type 0x04 Ed25519 key")
	}
	sum := sha256.Sum256(append([]byte(parts[0]+"\n"), material...))
	if binary.BigEndian.Uint32(sum[:4]) != uint32(id) {
		return "", 0, nil, fmt.Errorf("key id %s is not SHA-256(name, 0x0A, 0x04, key)[:4] = %x", parts[1], sum[:4])
	}
	return parts[0], uint32(id), ed25519.PublicKey(material[1:]), nil
}
