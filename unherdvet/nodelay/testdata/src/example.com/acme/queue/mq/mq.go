// Package mq stands for a queue service's client, which talks to the
// network through its sibling package api and imports no network
// package itself.
package mq

import "example.com/acme/queue/api"

// A Queue is one queue of the service.
type Queue struct{ Name string }

// Release puts a reserved message back.
func (q Queue) Release(id string) error { return api.Req(nil, "POST", q.Name+"/"+id+"/release") }

// Delete removes a message.
func (q Queue) Delete(id string) error { return api.Req(nil, "DELETE", q.Name+"/"+id) }
