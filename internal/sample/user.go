package sample

import (
	"os/user"
	"strconv"
	"sync"
)

var userCache sync.Map // uint32 -> string

// UserName returns the login name of uid from the user database, or the
// decimal uid when it has no entry. Results are cached for the process.
func UserName(uid uint32) string {
	if v, ok := userCache.Load(uid); ok {
		return v.(string)
	}
	name := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	userCache.Store(uid, name)
	return name
}
