package pebblestore

import (
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// Commit metrics: every write is its own batch committed with pebble.Sync,
// counted as one commit of its kind; Pebble's commit pipeline then syncs
// many such batches with one fdatasync of its WAL, which walSyncCounter
// counts. Commits per second over fsyncs per second is the group commit
// at work.

// walSyncCounter is the file system under Pebble with the syncs of its
// write-ahead logs (*.log) counted; every other file passes through.
type walSyncCounter struct {
	vfs.FS
	commits *commitmetrics.Recorder
}

func (c walSyncCounter) counted(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return countedFile{File: f, commits: c.commits}, nil
}

func (c walSyncCounter) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := c.FS.Create(name, category)
	return c.counted(name, f, err)
}

func (c walSyncCounter) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := c.FS.ReuseForWrite(oldname, newname, category)
	return c.counted(newname, f, err)
}

func (c walSyncCounter) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := c.FS.OpenReadWrite(name, category, opts...)
	return c.counted(name, f, err)
}

// countedFile is a WAL file whose syncs are counted.
type countedFile struct {
	vfs.File
	commits *commitmetrics.Recorder
}

func (f countedFile) Sync() error {
	f.commits.Fsync()
	return f.File.Sync()
}

func (f countedFile) SyncData() error {
	f.commits.Fsync()
	return f.File.SyncData()
}

func (f countedFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if full {
		f.commits.Fsync()
	}
	return full, err
}
