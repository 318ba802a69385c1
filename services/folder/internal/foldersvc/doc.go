// Package foldersvc is the folder service: the folder tree (list, create,
// move, delete) and which groups may see each folder.
//
// Rules beyond the spec, decided here:
//   - A folder is visible to a user iff it shares a group with the user;
//     callers holding the internal scope (docrepo's own services) see all.
//     A new folder gets the creator's groups; a creator without any group
//     is refused (403), since nobody could ever see the folder.
//   - Names: 1 to 255 characters after trimming, no "->" (the path
//     separator) and no control characters; otherwise 422 "Missing or
//     invalid name". Sibling names may repeat: folders are identified by id
//     and code, not by path.
//   - A full_path is at most MaxPathBytes (1200) bytes of UTF-8: a create
//     or a move that would make any path of the tree longer is refused with
//     422 "Folder path too long: at most 1200 bytes" (the path index of
//     Postgres cannot hold much longer entries).
//   - List order is full_path compared case-insensitively, then exactly,
//     then by id; limit is 1..500 (default 50).
//   - child_count counts the direct children the caller can see.
//   - Tree changes take a tree-wide advisory lock: moves and deletes
//     exclusively, creates shared. Two racing moves are therefore
//     serialised and the second one sees the first one's result, so the
//     tree can never acquire a cycle.
//   - Delete removes the whole subtree; it is refused (403) when the subtree
//     holds a folder the caller cannot see, so nobody deletes what they
//     cannot see. Documents stay; their assignments to the deleted folders
//     go (the document service's: each removal bumps the document's
//     revision and emits its event). Once the deletion committed, and
//     before it answers, the document service is told (FoldersDeleted, as
//     the service credential), so that the deleting client is refused an
//     upload into a deleted folder at once; the folder.deleted event does
//     the same later and covers a call that failed. unassigned_documents
//     counts only the documents the caller can see, so the answer reveals
//     nothing about the others.
package foldersvc
