package main

// The log read as C2SP tlog-tiles (thirteen serve --tiles): the tiles authenticated by
// tlog.TileHashReader against the checkpoint, the proofs the server gave remade from them by
// tlog.ProveRecord and tlog.ProveTree, and the entry bundles read against the leaves.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8 // C2SP tiles are 256 hashes wide

// tileServer is a tlog.TileReader over HTTP. Go's tile paths name the height
// ("tile/8/0/x001/234"), C2SP's do not ("tile/0/x001/234"): the rest is spelt alike, partial
// tiles' ".p/<W>" included. Tiles are immutable, so each is fetched once.
type tileServer struct {
	base    string
	client  *http.Client
	fetched map[string][]byte
}

func (s *tileServer) Height() int { return height }

func (s *tileServer) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		data, err := s.get(c2spPath(t))
		if err != nil {
			return nil, err
		}
		if len(data) != t.W*tlog.HashSize {
			return nil, fmt.Errorf("%s: %d bytes, not %d hashes", c2spPath(t), len(data), t.W)
		}
		out[i] = data
	}
	return out, nil
}

func (s *tileServer) SaveTiles([]tlog.Tile, [][]byte) {}

func c2spPath(t tlog.Tile) string {
	path := strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", t.H))
	if t.L == -1 { // Go's data tiles stand for C2SP's entry bundles: same numbering
		return "tile/entries/" + strings.TrimPrefix(path, "data/")
	}
	return "tile/" + path
}

func (s *tileServer) get(path string) ([]byte, error) {
	if data, ok := s.fetched[path]; ok {
		return data, nil
	}
	answer, err := s.client.Get(s.base + "/" + path)
	if err != nil {
		return nil, err
	}
	defer answer.Body.Close()
	data, err := io.ReadAll(answer.Body)
	if err != nil {
		return nil, err
	}
	if answer.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /%s: %s", path, answer.Status)
	}
	s.fetched[path] = data
	return data, nil
}

func tiles(base string, verifier note.Verifier, given tlog.Tree, leaves []Leaf, proofs Proofs) {
	server := &tileServer{
		base:    strings.TrimSuffix(base, "/"),
		client:  &http.Client{Timeout: 30 * time.Second},
		fetched: map[string][]byte{},
	}
	served, err := server.get("checkpoint")
	if err != nil {
		fail("tiles: %v", err)
		return
	}
	_, tree, err := openCheckpoint(served, verifier)
	if err != nil {
		fail("tiles' checkpoint: %v", err)
		return
	}
	if tree != given {
		fail("tiles' checkpoint: %d leaves, root %s; GetCheckpoint served %d, %s",
			tree.N, tree.Hash, given.N, given.Hash)
		return
	}
	pass("tiles at %s: /checkpoint signed by the log key (note.Open), the tree GetCheckpoint served", base)

	reader := tlog.TileHashReader(tree, server)
	if err := tileHashes(reader, tree, leaves); err != nil {
		fail("tiles: %v", err)
		return
	}
	pass("%d tiles read by tlog.TileHashReader (height %d, paths Go's less the height): authenticated against the checkpoint's root (tlog.TreeHash); each leaf hash in them is tlog.RecordHash of the leaf's data",
		len(server.fetched)-1, height)

	remade(reader, proofs)
	bundles(server, tree, leaves)
}

func tileHashes(reader tlog.HashReader, tree tlog.Tree, leaves []Leaf) error {
	root, err := tlog.TreeHash(tree.N, reader)
	if err != nil {
		return err
	}
	if root != tree.Hash {
		return fmt.Errorf("tlog.TreeHash from the tiles is %s, the checkpoint says %s", root, tree.Hash)
	}
	indexes := make([]int64, len(leaves))
	for n := range leaves {
		indexes[n] = tlog.StoredHashIndex(0, int64(n))
	}
	hashes, err := reader.ReadHashes(indexes)
	if err != nil {
		return err
	}
	for n, leaf := range leaves {
		if hashes[n] != tlog.RecordHash(leaf.Data) {
			return fmt.Errorf("leaf %d's hash in the tiles is %s, not that of its data", n, hashes[n])
		}
	}
	return nil
}

// remade compares each proof the server gave with the one Go makes from the tiles.
func remade(reader tlog.HashReader, proofs Proofs) {
	bad := 0
	for _, p := range proofs.Inclusion {
		proof, err := tlog.ProveRecord(p.Size, p.Leaf, reader)
		if err == nil && !same(proof, p.Hashes) {
			err = fmt.Errorf("tlog.ProveRecord from the tiles gives another proof")
		}
		if err != nil {
			if bad++; bad <= shown {
				fail("inclusion proof (%s) of leaf %d in the tree of %d: %v", p.Source, p.Leaf, p.Size, err)
			}
		}
	}
	for _, p := range proofs.Consistency {
		proof, err := tlog.ProveTree(p.New, p.Old, reader)
		if err == nil && !same(proof, p.Hashes) {
			err = fmt.Errorf("tlog.ProveTree from the tiles gives another proof")
		}
		if err != nil {
			if bad++; bad <= shown {
				fail("consistency proof from %d to %d leaves: %v", p.Old, p.New, err)
			}
		}
	}
	if bad > shown {
		fail("... and %d more proofs", bad-shown)
	}
	if bad == 0 {
		pass("the %d inclusion and %d consistency proofs the server gave are, byte for byte, those tlog.ProveRecord and tlog.ProveTree make from the tiles",
			len(proofs.Inclusion), len(proofs.Consistency))
	}
}

func same(proof []tlog.Hash, given [][]byte) bool {
	if len(proof) != len(given) {
		return false
	}
	for i := range proof {
		if !bytes.Equal(proof[i][:], given[i]) {
			return false
		}
	}
	return true
}

// bundles reads every entry bundle of the tree (C2SP: big-endian uint16 length-prefixed
// entries, 256 a bundle, the last one partial); each entry must be the leaf's data.
func bundles(server *tileServer, tree tlog.Tree, leaves []Leaf) {
	count := int64(0)
	for n := int64(0); n*(1<<height) < tree.N; n++ {
		width := tree.N - n*(1<<height)
		if width > 1<<height {
			width = 1 << height
		}
		path := c2spPath(tlog.Tile{H: height, L: -1, N: n, W: int(width)})
		data, err := server.get(path)
		if err != nil {
			fail("entry bundles: %v", err)
			return
		}
		for i := int64(0); i < width; i++ {
			if len(data) < 2 || len(data) < 2+int(binary.BigEndian.Uint16(data)) {
				fail("entry bundle %s: entry %d is cut short", path, i)
				return
			}
			size := int(binary.BigEndian.Uint16(data))
			entry, leaf := data[2:2+size], n*(1<<height)+i
			if !bytes.Equal(entry, leaves[leaf].Data) {
				fail("entry bundle %s: entry %d is not the data of leaf %d", path, i, leaf)
				return
			}
			data = data[2+size:]
		}
		if len(data) != 0 {
			fail("entry bundle %s: %d bytes after its %d entries", path, len(data), width)
			return
		}
		count++
	}
	pass("%d entry bundles (tile/entries/<N>, read here: x/mod knows its own data tiles only): each entry is its leaf's data, byte for byte, so its hash is the authenticated one",
		count)
}
