package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// TestBusinessDateRangeIsCheckedInUTC: the business date must fall in years 1 to 9999
// once converted to UTC (the form it is stored and returned in); an offset
// that pushes it past either end is a 400, on upload and on PATCH, rather
// than a stored year 10000 that no RFC 3339 reader accepts.
func TestBusinessDateRangeIsCheckedInUTC(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	folderID := strconv.FormatInt(u.folder.FolderID, 10)
	const detail = "Invalid value for date: expected an ISO 8601 date such as 2024-05-31 or 2024-05-31T12:00:00Z"
	for _, date := range []string{"9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+14:00"} {
		r := u.upload(field("folder_id", folderID), field("date", date), filePart("d.txt", uniqText(t, 50)))
		expect(t, r, 400, detail)
	}
	res := u.uploadFile("ok.txt", uniqText(t, 50), field("date", "9999-12-31T23:59:59Z"))
	path := fmt.Sprintf("/apiv3/pub/documents/%d", res.DocID)
	for _, date := range []string{"9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+14:00"} {
		expect(t, u.do("PATCH", path, map[string]any{"date": date}), 400, detail)
	}
	if d := u.getDoc(res.DocID, ""); d.Date == nil || !d.Date.Equal(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)) || d.Date.Location() != time.UTC {
		t.Fatalf("date = %v", d.Date)
	}
}
