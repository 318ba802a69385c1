package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	rest "github.com/docrepo/docrepo/pkg/client"
)

// folder is docs/api.md §2.5.
type folder = rest.Folder

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func (c *client) createFolder(name string, parent int64) folder {
	c.t.Helper()
	f, err := c.rest().CreateFolder(context.Background(), name, parent)
	if err != nil {
		c.t.Fatalf("create folder %q: %v", name, err)
	}
	return *f
}

func (c *client) listFolders(query string) []folder {
	c.t.Helper()
	r := c.do("GET", "/apiv2/pub/folders"+query, nil)
	expect(c.t, r, 200)
	var fs []folder
	r.JSON(c.t, &fs)
	return fs
}

func names(fs []folder) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.FullPath
	}
	return out
}

func TestCreateFolder(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	root := u.createFolder("Contracts", 0)
	if root.FolderID <= 0 || root.Name != "Contracts" || root.FullPath != "Contracts" || root.ParentID != 0 || root.ChildCount != 0 || !uuidRE.MatchString(root.Code) {
		t.Fatalf("created folder = %+v", root)
	}
	child := u.createFolder("2024", root.FolderID)
	if child.FullPath != "Contracts->2024" || child.ParentID != root.FolderID {
		t.Fatalf("child = %+v", child)
	}
	// JSON numbers, not strings.
	r := u.do("POST", "/apiv2/pub/folders", map[string]any{"name": "Raw"})
	expect(t, r, 200)
	if !regexp.MustCompile(`"folder_id":\d+`).Match(r.Body) || !regexp.MustCompile(`"parent_id":0`).Match(r.Body) {
		t.Fatalf("ids are not JSON numbers: %s", r.Body)
	}

	other := newUser(t, []string{uniq("g")})
	tests := []struct {
		name   string
		body   any
		status int
		detail string
	}{
		{name: "missing name", body: map[string]any{}, status: 422, detail: "Missing or invalid name"},
		{name: "empty body", body: "", status: 422, detail: "Missing or invalid name"},
		{name: "empty name", body: map[string]any{"name": ""}, status: 422, detail: "Missing or invalid name"},
		{name: "blank name", body: map[string]any{"name": "   "}, status: 422, detail: "Missing or invalid name"},
		{name: "arrow in name", body: map[string]any{"name": "a->b"}, status: 422, detail: "Missing or invalid name"},
		{name: "over-long name", body: map[string]any{"name": strings.Repeat("x", 256)}, status: 422, detail: "Missing or invalid name"},
		{name: "control character", body: map[string]any{"name": "a\nb"}, status: 422, detail: "Missing or invalid name"},
		{name: "name of wrong type", body: map[string]any{"name": 5}, status: 400},
		{name: "unknown field", body: map[string]any{"name": "x", "colour": "red"}, status: 400},
		{name: "malformed JSON", body: `{"name": `, status: 400},
		{name: "unknown parent", body: map[string]any{"name": "x", "parent_id": 99999999}, status: 404},
		{name: "parent of another group", body: map[string]any{"name": "x", "parent_id": other.createFolder("Theirs", 0).FolderID}, status: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := u.do("POST", "/apiv2/pub/folders", tt.body)
			if tt.detail != "" {
				expect(t, r, tt.status, tt.detail)
			} else {
				expect(t, r, tt.status)
			}
		})
	}
	t.Run("name exactly at the maximum", func(t *testing.T) {
		f := u.createFolder(strings.Repeat("é", 255), 0)
		if len([]rune(f.Name)) != 255 {
			t.Fatalf("name has %d characters", len([]rune(f.Name)))
		}
	})
}

func TestListFolders(t *testing.T) {
	t.Parallel()
	g := uniq("g")
	u := newUser(t, []string{g})
	peer := newUser(t, []string{g}) // same group: sees u's folders
	stranger := newUser(t, []string{uniq("g")})

	b := u.createFolder("beta", 0)
	a := u.createFolder("Alpha", 0)
	u.createFolder("gamma", b.FolderID)
	u.createFolder("Delta", b.FolderID)
	stranger.createFolder("Alphabet soup", 0)

	got := names(peer.listFolders(""))
	want := []string{"Alpha", "beta", "beta->Delta", "beta->gamma"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("peer sees %v, want %v (sorted by full_path, case-insensitive)", got, want)
	}
	for _, f := range stranger.listFolders("") {
		if f.FolderID == a.FolderID || f.FolderID == b.FolderID {
			t.Fatalf("stranger sees %q of another group", f.FullPath)
		}
	}
	fs := u.listFolders("?parent_id=0")
	if fmt.Sprint(names(fs)) != "[Alpha beta]" {
		t.Fatalf("root level = %v", names(fs))
	}
	for _, f := range fs {
		if f.FolderID == b.FolderID && f.ChildCount != 2 {
			t.Fatalf("beta child_count = %d, want 2", f.ChildCount)
		}
	}
	if got := names(u.listFolders(fmt.Sprintf("?parent_id=%d", b.FolderID))); fmt.Sprint(got) != "[beta->Delta beta->gamma]" {
		t.Fatalf("children of beta = %v", got)
	}
	if got := names(u.listFolders("?q=ALP")); fmt.Sprint(got) != "[Alpha]" {
		t.Fatalf("q=ALP = %v (case-insensitive substring of name)", got)
	}
	if got := names(u.listFolders("?q=%25")); len(got) != 0 {
		t.Fatalf("q=%% matched %v: the filter must be a literal substring", got)
	}
	if got := names(u.listFolders("?limit=2&offset=1")); fmt.Sprint(got) != "[beta beta->Delta]" {
		t.Fatalf("limit=2&offset=1 = %v", got)
	}
	for _, tt := range []struct {
		name  string
		query string
	}{
		{name: "limit zero", query: "?limit=0"},
		{name: "limit above 500", query: "?limit=501"},
		{name: "negative offset", query: "?offset=-1"},
		{name: "limit not a number", query: "?limit=ten"},
		{name: "parent not a number", query: "?parent_id=x"},
	} {
		t.Run(tt.name, func(t *testing.T) { expect(t, u.do("GET", "/apiv2/pub/folders"+tt.query, nil), 400) })
	}
	if r := u.do("GET", "/apiv2/pub/folders?limit=500", nil); r.Status != 200 {
		t.Fatalf("limit=500: %d %s", r.Status, r.Body)
	}
}

func TestListFoldersDefaultLimit(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	for i := 0; i < 55; i++ {
		u.createFolder(fmt.Sprintf("f%02d", i), 0)
	}
	if n := len(u.listFolders("")); n != 50 {
		t.Fatalf("default page has %d folders, want 50", n)
	}
	if n := len(u.listFolders("?offset=50")); n != 5 {
		t.Fatalf("second page has %d folders, want 5", n)
	}
}

func TestMoveFolder(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	stranger := newUser(t, []string{uniq("g")})
	a := u.createFolder("A", 0)
	b := u.createFolder("B", a.FolderID)
	c := u.createFolder("C", b.FolderID)
	x := u.createFolder("X", 0)
	theirs := stranger.createFolder("Theirs", 0)

	r := u.do("POST", fmt.Sprintf("/apiv2/pub/folders/%d/move", b.FolderID), map[string]any{"new_parent_id": x.FolderID})
	expect(t, r, 200)
	var moved folder
	r.JSON(t, &moved)
	if moved.FullPath != "X->B" || moved.ParentID != x.FolderID || moved.FolderID != b.FolderID {
		t.Fatalf("moved = %+v", moved)
	}
	paths := map[int64]string{}
	for _, f := range u.listFolders("") {
		paths[f.FolderID] = f.FullPath
	}
	if paths[c.FolderID] != "X->B->C" {
		t.Fatalf("descendant path = %q, want X->B->C", paths[c.FolderID])
	}
	const cycle = "Cannot move a folder into one of its own descendants"
	tests := []struct {
		name   string
		id     any
		body   any
		status int
		detail string
	}{
		{name: "into itself", id: x.FolderID, body: map[string]any{"new_parent_id": x.FolderID}, status: 400, detail: cycle},
		{name: "into a child", id: x.FolderID, body: map[string]any{"new_parent_id": b.FolderID}, status: 400, detail: cycle},
		{name: "into a grandchild", id: x.FolderID, body: map[string]any{"new_parent_id": c.FolderID}, status: 400, detail: cycle},
		{name: "unknown folder", id: 99999999, body: map[string]any{"new_parent_id": 0}, status: 404},
		{name: "unknown target", id: c.FolderID, body: map[string]any{"new_parent_id": 99999999}, status: 404},
		{name: "invisible folder", id: theirs.FolderID, body: map[string]any{"new_parent_id": 0}, status: 404},
		{name: "invisible target", id: c.FolderID, body: map[string]any{"new_parent_id": theirs.FolderID}, status: 404},
		{name: "missing new_parent_id", id: c.FolderID, body: map[string]any{}, status: 400},
		{name: "non-numeric id", id: "abc", body: map[string]any{"new_parent_id": 0}, status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := u.do("POST", fmt.Sprintf("/apiv2/pub/folders/%v/move", tt.id), tt.body)
			if tt.detail != "" {
				expect(t, r, tt.status, tt.detail)
			} else {
				expect(t, r, tt.status)
			}
		})
	}
	r = u.do("POST", fmt.Sprintf("/apiv2/pub/folders/%d/move", c.FolderID), map[string]any{"new_parent_id": 0})
	expect(t, r, 200)
	r.JSON(t, &moved)
	if moved.FullPath != "C" || moved.ParentID != 0 {
		t.Fatalf("moved to root = %+v", moved)
	}
}

func TestDeleteFolder(t *testing.T) {
	t.Parallel()
	g := uniq("g")
	u := newUser(t, []string{g})
	a := u.createFolder("A", 0)
	b := u.createFolder("B", a.FolderID)
	u.createFolder("C", b.FolderID)
	keep := u.createFolder("Keep", 0)

	r := u.do("DELETE", fmt.Sprintf("/apiv2/pub/folders/%d", a.FolderID), nil)
	expect(t, r, 200)
	var del struct {
		FolderID         int64   `json:"folder_id"`
		DeletedFolderIDs []int64 `json:"deleted_folder_ids"`
	}
	r.JSON(t, &del)
	if del.FolderID != a.FolderID || len(del.DeletedFolderIDs) != 3 {
		t.Fatalf("delete = %s", r.Body)
	}
	if got := names(u.listFolders("")); fmt.Sprint(got) != "[Keep]" {
		t.Fatalf("after delete: %v", got)
	}
	expect(t, u.do("DELETE", fmt.Sprintf("/apiv2/pub/folders/%d", a.FolderID), nil), 404)
	expect(t, u.do("DELETE", "/apiv2/pub/folders/0", nil), 400)

	// A subtree holding a folder the caller cannot see is not deleted.
	other := newUser(t, []string{uniq("g"), g})
	hidden := newUser(t, []string{uniq("g")})
	_ = other
	parent := u.createFolder("Shared", 0)
	// hidden's folder under parent: made by a user of both groups, then
	// narrowed to a group u does not have.
	both := newUser(t, []string{g, uniq("g")})
	sub := both.createFolder("Mixed", parent.FolderID)
	if _, err := stk.pool.Exec(context.Background(), `DELETE FROM folder.folder_groups WHERE folder_id = $1 AND group_id = (SELECT id FROM identity.groups WHERE name = $2)`, sub.FolderID, g); err != nil {
		t.Fatal(err)
	}
	_ = hidden
	expect(t, u.do("DELETE", fmt.Sprintf("/apiv2/pub/folders/%d", parent.FolderID), nil), 403)
	if len(u.listFolders(fmt.Sprintf("?q=%s", "Shared"))) != 1 {
		t.Fatal("refused delete removed the folder")
	}
	_ = keep
}

// TestConcurrentMovesNeverCycle fires conflicting moves in parallel; however
// they interleave, the tree must stay a tree: every folder reaches the root,
// nothing is lost, and every full_path agrees with the parent chain.
func TestConcurrentMovesNeverCycle(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	var ids []int64
	for i := 0; i < 8; i++ {
		ids = append(ids, u.createFolder(fmt.Sprintf("n%d", i), 0).FolderID)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for i := 0; i < 25; i++ {
				from := ids[rng.IntN(len(ids))]
				to := ids[rng.IntN(len(ids))]
				if rng.IntN(5) == 0 {
					to = 0
				}
				r := doRequest(t, u.token, "POST", fmt.Sprintf("/apiv2/pub/folders/%d/move", from), map[string]any{"new_parent_id": to})
				mu.Lock()
				statuses[r.Status]++
				mu.Unlock()
			}
		}(uint64(w))
	}
	// Pairwise swaps are the classic race: A into B while B into A.
	for i := 0; i+1 < len(ids); i += 2 {
		wg.Add(2)
		a, b := ids[i], ids[i+1]
		go func() {
			defer wg.Done()
			doRequest(t, u.token, "POST", fmt.Sprintf("/apiv2/pub/folders/%d/move", a), map[string]any{"new_parent_id": b})
		}()
		go func() {
			defer wg.Done()
			doRequest(t, u.token, "POST", fmt.Sprintf("/apiv2/pub/folders/%d/move", b), map[string]any{"new_parent_id": a})
		}()
	}
	wg.Wait()
	for code := range statuses {
		if code != http.StatusOK && code != http.StatusBadRequest {
			t.Fatalf("unexpected statuses %v", statuses)
		}
	}
	fs := u.listFolders("?limit=500")
	if len(fs) != len(ids) {
		t.Fatalf("%d folders after the race, want %d", len(fs), len(ids))
	}
	byID := map[int64]folder{}
	for _, f := range fs {
		byID[f.FolderID] = f
	}
	for _, f := range fs {
		var chain []string
		cur := f
		for steps := 0; ; steps++ {
			if steps > len(ids) {
				t.Fatalf("cycle through folder %d", f.FolderID)
			}
			chain = append([]string{cur.Name}, chain...)
			if cur.ParentID == 0 {
				break
			}
			p, ok := byID[cur.ParentID]
			if !ok {
				t.Fatalf("folder %d has a parent %d that is gone", cur.FolderID, cur.ParentID)
			}
			cur = p
		}
		if want := strings.Join(chain, "->"); f.FullPath != want {
			t.Fatalf("folder %d full_path %q, parent chain says %q", f.FolderID, f.FullPath, want)
		}
	}
	got := names(fs)
	if !sort.SliceIsSorted(got, func(i, j int) bool { return strings.ToLower(got[i]) < strings.ToLower(got[j]) }) {
		t.Fatalf("not sorted: %v", got)
	}
	t.Logf("move outcomes: %v", statuses)
	_ = time.Now
}
