package errtext

import "strings"

// gitRepositoryNotFound are the texts with which Git servers say that a
// repository does not exist, or that the caller may not know it does: git's
// own git-upload-pack on its standard error (exit status 128), then GitHub,
// GitLab, Bitbucket, and Gogs and Gitea, whose texts go-git v5 matches too
// (plumbing/transport/internal/common); only git's is produced in a test.
var gitRepositoryNotFound = []string{
	"does not appear to be a git repository",
	"Repository not found.",
	"The project you were looking for could not be found",
	"repository does not exist.",
	"Repository does not exist or you do not have access",
}

// GitRepositoryNotFound reports whether text, what a Git server wrote on
// the standard error of git-upload-pack over SSH (or in an ERR packet line)
// instead of its advertisement of references, says that the repository
// does not exist or is not visible to the caller. Git's protocol has no code
// for it: the exit status is git's 128 for any fatal error (1 for GitHub).
func GitRepositoryNotFound(text string) bool {
	for _, s := range gitRepositoryNotFound {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}
