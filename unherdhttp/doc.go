// Package unherdhttp brings the retry policy to net/http.
package unherdhttp
