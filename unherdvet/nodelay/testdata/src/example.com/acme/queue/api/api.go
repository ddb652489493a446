// Package api stands for the HTTP transport of a queue service's client.
package api

import "net/http"

// Req sends one request to the service.
func Req(c *http.Client, method, path string) error {
	req, err := http.NewRequest(method, path, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
